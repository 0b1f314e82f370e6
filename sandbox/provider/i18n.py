"""The two languages of the sandbox's shopper-facing pages (card form, 3-D Secure)."""

from __future__ import annotations

from django.http import HttpRequest

LOCALES = ("en", "es")


def request_locale(request: HttpRequest) -> str:
    """`?locale=` when valid, else the browser's language: `es` for any Spanish, else `en`."""
    asked = request.GET.get("locale", "")
    if asked in LOCALES:
        return asked
    accept = request.META.get("HTTP_ACCEPT_LANGUAGE", "").strip().lower()
    return "es" if accept.startswith("es") else "en"


CARD_FORM = {
    "en": {
        "title": "Secure card form",
        "number": "Card number",
        "exp": "Expiry (MM/YY)",
        "exp_placeholder": "MM/YY",
        "cvv": "Security code",
        "name": "Name on card",
        "secure": "Your card details are encrypted and sent to the payment provider only.",
    },
    "es": {
        "title": "Formulario de tarjeta seguro",
        "number": "Número de tarjeta",
        "exp": "Vencimiento (MM/AA)",
        "exp_placeholder": "MM/AA",
        "cvv": "Código de seguridad",
        "name": "Nombre en la tarjeta",
        "secure": "Tus datos viajan cifrados y solo los recibe el procesador de pagos.",
    },
}

THREE_DS = {
    "en": {
        "title": "Confirm your purchase",
        "issuer": "Banco Sandbox · 3-D Secure",
        "merchant": "Merchant",
        "amount": "Amount",
        "card": "Card",
        "code": "One-time code sent to your phone",
        "hint": "Sandbox: 123456 passes, anything else fails.",
        "verify": "Verify",
        "cancel": "Cancel",
        "choose": "Choose Verify or Cancel.",
        "passed": "Verified. You can return to the store.",
        "failed": "The verification failed. The store will tell you what to do next.",
        "over": "This verification is already over.",
        "return": "Return to the store",
        "unknown": "This verification link is not valid.",
        "unknown_title": "Verification not found",
    },
    "es": {
        "title": "Confirma tu compra",
        "issuer": "Banco Sandbox · 3-D Secure",
        "merchant": "Comercio",
        "amount": "Importe",
        "card": "Tarjeta",
        "code": "Código de un solo uso enviado a tu teléfono",
        "hint": "Sandbox: 123456 aprueba, cualquier otro código rechaza.",
        "verify": "Verificar",
        "cancel": "Cancelar",
        "choose": "Elige Verificar o Cancelar.",
        "passed": "Verificación correcta. Puedes volver a la tienda.",
        "failed": "La verificación no fue exitosa. La tienda te dirá cómo continuar.",
        "over": "Esta verificación ya terminó.",
        "return": "Volver a la tienda",
        "unknown": "Este enlace de verificación no es válido.",
        "unknown_title": "Verificación no encontrada",
    },
}
