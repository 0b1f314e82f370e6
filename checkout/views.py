"""The shopper's pages. Views are thin: parse, call one service, render or answer JSON."""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.request import RawPostDataException
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.debug import sensitive_post_parameters, sensitive_variables
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from checkout.cart import Cart, CartError
from checkout.forms import CheckoutForm, PaymentAttemptForm, QuantityForm
from checkout.limits import LimitsUnavailable, payment_attempts_exceeded, status_checks_exceeded
from checkout.models import Order, OrderStatus, Product
from checkout.services import (
    CheckoutError,
    order_check_payment,
    order_create_from_cart,
    order_pay,
)
from config.security import sdk_url
from payments.catalogue import payment_methods_for

SESSION_ORDERS = "orders"
MAX_JSON_BYTES = 4096


def _remember_order(request: HttpRequest, order: Order) -> None:
    orders = request.session.get(SESSION_ORDERS, [])
    request.session[SESSION_ORDERS] = [*orders[-19:], order.reference]


def _own_order(request: HttpRequest, reference: str) -> Order:
    """Only the browser session that placed an order can see or pay it."""
    if reference not in request.session.get(SESSION_ORDERS, []):
        raise Http404
    return get_object_or_404(Order.objects.prefetch_related("items"), reference=reference)


def _context(request: HttpRequest, **extra: object) -> dict[str, object]:
    return {"shop_name": settings.SHOP_NAME, "cart_count": Cart(request.session).count, **extra}


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    products = Product.objects.filter(active=True)
    return render(request, "checkout/home.html", _context(request, products=products))


@require_GET
def product_detail(request: HttpRequest, slug: str) -> HttpResponse:
    product = get_object_or_404(Product, slug=slug, active=True)
    return render(request, "checkout/product.html", _context(request, product=product))


@require_GET
def cart_view(request: HttpRequest) -> HttpResponse:
    cart = Cart(request.session)
    return render(
        request, "checkout/cart.html", _context(request, lines=cart.lines(), total=cart.total())
    )


@require_POST
def cart_add(request: HttpRequest, slug: str) -> HttpResponse:
    product = get_object_or_404(Product, slug=slug)
    form = QuantityForm(request.POST)
    if not form.is_valid() or form.cleaned_data["quantity"] < 1:
        messages.error(request, _("Choose a quantity of at least 1."))
        return redirect("checkout:product", slug=slug)
    try:
        Cart(request.session).add(product, form.cleaned_data["quantity"])
    except CartError as exc:
        messages.error(request, str(exc))
        return redirect("checkout:product", slug=slug)
    messages.success(request, _("%(name)s added to your cart.") % {"name": product.display_name})
    return redirect("checkout:cart")


@require_POST
def cart_update(request: HttpRequest, slug: str) -> HttpResponse:
    product = get_object_or_404(Product, slug=slug)
    form = QuantityForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Enter a quantity from 0 to 99."))
        return redirect("checkout:cart")
    try:
        Cart(request.session).set(product, form.cleaned_data["quantity"])
    except CartError as exc:
        messages.error(request, str(exc))
    return redirect("checkout:cart")


@require_POST
def cart_remove(request: HttpRequest, slug: str) -> HttpResponse:
    product = get_object_or_404(Product, slug=slug)
    Cart(request.session).remove(product)
    return redirect("checkout:cart")


@require_http_methods(["GET", "POST"])
def checkout(request: HttpRequest) -> HttpResponse:
    cart = Cart(request.session)
    if not cart:
        messages.info(request, _("Your cart is empty."))
        return redirect("checkout:cart")
    form = CheckoutForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            order = order_create_from_cart(
                cart=cart, customer=form.cleaned_data, language=get_language() or "es"
            )
        except CheckoutError as exc:
            messages.error(request, exc.message)
            return redirect("checkout:cart")
        cart.clear()
        _remember_order(request, order)
        return redirect("checkout:pay", reference=order.reference)
    return render(
        request,
        "checkout/checkout.html",
        _context(request, form=form, lines=cart.lines(), total=cart.total()),
    )


@require_GET
def pay(request: HttpRequest, reference: str) -> HttpResponse:
    order = _own_order(request, reference)
    if not order.is_payable:
        return redirect("checkout:order", reference=reference)
    methods = payment_methods_for(total=order.total)
    return render(
        request,
        "checkout/pay.html",
        _context(
            request,
            order=order,
            methods=methods,
            card_payable=any(m.available for m in methods),
            sdk_url=sdk_url(),
            public_key=settings.PAYMENTS_PUBLIC_KEY,
            theme=settings.PAYMENTS_SDK_THEME,
            locale="en" if get_language() == "en" else "es",
        ),
    )


@sensitive_variables("body", "data")
def _json_body(request: HttpRequest) -> dict[str, object] | None:
    """The JSON object in the body, or None: too large (as declared or as sent), not JSON, not
    an object, or a multipart body that Django's CSRF check has already read as a form."""
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None
    if declared > MAX_JSON_BYTES:  # refused before anything is read
        return None
    try:
        body = request.body
    except RawPostDataException:
        return None
    if len(body) > MAX_JSON_BYTES:
        return None
    try:
        data = json.loads(body or b"{}")
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    return data if isinstance(data, dict) else None


def _error(message: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"result": "error", "message": message}, status=status)


@sensitive_variables("data", "form")
@sensitive_post_parameters()
@require_POST
def pay_attempt(request: HttpRequest, reference: str) -> JsonResponse:
    """CSRF-protected JSON: create the payment of one attempt on the server."""
    order = _own_order(request, reference)
    try:
        exceeded = payment_attempts_exceeded(request)
    except LimitsUnavailable:
        response = _error(
            _(
                "We cannot take your payment at this moment. Nothing was charged; please try "
                "again in a minute."
            ),
            status=503,
        )
        response["Retry-After"] = "30"
        return response
    if exceeded:
        return _error(
            _(
                "Too many payment attempts from this browser. Please wait a few minutes "
                "before trying again."
            ),
            status=429,
        )
    data = _json_body(request)
    if data is None:
        return _error(_("The request is not valid JSON."))
    form = PaymentAttemptForm(data)
    if not form.is_valid():
        return _error(
            _("The payment request is incomplete: %(fields)s.") % {"fields": ", ".join(form.errors)}
        )
    try:
        outcome = order_pay(
            order=order,
            card_token=form.cleaned_data["card_token"],
            attempt_id=form.cleaned_data["attempt_id"],
            prevention_data={
                "session_id": form.cleaned_data["session_id"],
                "device_finger_print_token": form.cleaned_data["session_id"],
                "user_agent": form.cleaned_data["user_agent"],
                "website": settings.SHOP_BASE_URL,
            },
            return_url=request.build_absolute_uri(
                reverse("checkout:order", kwargs={"reference": order.reference})
            ),
        )
    except CheckoutError as exc:
        return _error(exc.message, status=409)
    return JsonResponse({**outcome.as_json(), "redirect": _redirect_for(order, outcome.result)})


def _redirect_for(order: Order, result: str) -> str:
    if result in ("approved", "authorized"):
        return reverse("checkout:order", kwargs={"reference": order.reference})
    return ""


@require_http_methods(["GET", "POST"])
def payment_status(request: HttpRequest, reference: str) -> JsonResponse:
    """The outcome of the latest attempt (or of `payment_id`), checked with the provider while
    it is pending; past the session's rate of checks, from the shop's own records."""
    order = _own_order(request, reference)
    payment_id = request.GET.get("payment_id", "")[:64]
    refresh = not status_checks_exceeded(request)
    outcome = order_check_payment(order=order, payment_id=payment_id, refresh=refresh)
    return JsonResponse({**outcome.as_json(), "redirect": _redirect_for(order, outcome.result)})


@require_GET
def order_detail(request: HttpRequest, reference: str) -> HttpResponse:
    order = _own_order(request, reference)
    return render(
        request,
        "checkout/order.html",
        _context(
            request,
            order=order,
            items=order.items.all(),
            held=order.status == OrderStatus.AUTHORIZED,
        ),
    )
