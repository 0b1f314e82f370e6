"""The shopper's pages. Views are thin: parse, call one rule, render (the payment page's
JSON calls are in `checkout.api`)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.forms import Form
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from checkout.cart import MAX_PER_LINE, Cart, CartError, lines_total
from checkout.extensions import CheckoutBox, checkout_boxes, order_sections
from checkout.forms import CheckoutForm, MyOrdersForm, QuantityForm
from checkout.installments import order_installments, plans_for
from checkout.models import Order, OrderStatus, Product
from checkout.orders.limits import (
    order_creations_exceeded,
    order_lists_exceeded,
    status_checks_exceeded,
)
from checkout.orders.rules import (
    CheckoutError,
    cart_stock_check,
    order_as_paid_now,
    order_create_from_cart,
)
from checkout.orders.selectors import order_payments
from checkout.ownership import linked_order, own_order, remember_order
from checkout.paying.rules import order_pending_challenge
from checkout.reservations.rules import late_payment, order_expire_if_over, reservations_expire
from checkout.task_names import ORDERS_LIST_MAIL_TASK
from core.security import sdk_url
from core.task_queue import send_now
from payments.catalogue.rules import payment_methods_for


def _context(request: HttpRequest, **extra: object) -> dict[str, object]:
    return {"shop_name": settings.SHOP_NAME, "cart_count": Cart(request.session).count, **extra}


# Pages that show stock first give back what expired orders hold (bounded: the beat's task
# takes care of a backlog).
PAGE_EXPIRY_LIMIT = 20


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    reservations_expire(limit=PAGE_EXPIRY_LIMIT)
    # Read before the page is rendered: a database away answers 503 before the page's
    # messages are shown (and used up).
    products = list(Product.objects.filter(active=True))
    return render(request, "checkout/home.html", _context(request, products=products))


@require_GET
def product_detail(request: HttpRequest, slug: str) -> HttpResponse:
    reservations_expire(limit=PAGE_EXPIRY_LIMIT)
    product = get_object_or_404(Product, slug=slug, active=True)
    return render(request, "checkout/product.html", _context(request, product=product))


@require_GET
def cart_view(request: HttpRequest) -> HttpResponse:
    reservations_expire(limit=PAGE_EXPIRY_LIMIT)
    return _cart_page(request)


def _cart_page(request: HttpRequest, *, status: int = 200) -> HttpResponse:
    lines = Cart(request.session).lines()
    context = _context(request, lines=lines, total=lines_total(lines), max_per_line=MAX_PER_LINE)
    return render(request, "checkout/cart.html", context, status=status)


@require_POST
def cart_add(request: HttpRequest, slug: str) -> HttpResponse:
    reservations_expire(limit=PAGE_EXPIRY_LIMIT)
    product = get_object_or_404(Product, slug=slug)
    form = QuantityForm(request.POST)
    if not form.is_valid():
        messages.error(request, form.first_error())
        return redirect("checkout:product", slug=slug)
    if form.cleaned_data["quantity"] < 1:
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
    reservations_expire(limit=PAGE_EXPIRY_LIMIT)
    product = get_object_or_404(Product, slug=slug)
    form = QuantityForm(request.POST)
    if not form.is_valid():
        messages.error(request, form.first_error())
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
    boxes = [(box, box.form(request.POST or None)) for box in checkout_boxes()]
    # Every box is validated, so that each says its errors at once.
    boxes_valid = all([box_form.is_valid() for _box, box_form in boxes])
    if request.method == "POST" and form.is_valid() and boxes_valid:
        return _place_order(request, cart, form, boxes)
    lines = cart.lines()
    context = _context(
        request,
        form=form,
        boxes=[box_form for _box, box_form in boxes],
        lines=lines,
        total=lines_total(lines),
    )
    return render(request, "checkout/checkout.html", context)


def _place_order(
    request: HttpRequest, cart: Cart, form: CheckoutForm, boxes: list[tuple[CheckoutBox, Form]]
) -> HttpResponse:
    """The order placed and the shopper sent to pay; or, the stock gone (a rush for the last
    units), told at once on the cart's page (409), before anything is counted or written."""
    reservations_expire(limit=PAGE_EXPIRY_LIMIT)
    lines = cart.lines()
    try:
        cart_stock_check(lines)
        if order_creations_exceeded(request):
            form.add_error(
                None, _("You have placed many orders in a short time. Please wait a while.")
            )
            context = _context(
                request,
                form=form,
                boxes=[box_form for _box, box_form in boxes],
                lines=lines,
                total=lines_total(lines),
            )
            return render(request, "checkout/checkout.html", context, status=429)
        order = order_create_from_cart(
            cart=cart, customer=form.cleaned_data, language=get_language() or "es", lines=lines
        )
    except CheckoutError as exc:
        messages.error(request, exc.message)
        return _cart_page(request, status=409)
    for box, box_form in boxes:
        box.keep(box_form, order)
    cart.clear()
    remember_order(request, order)
    return redirect("checkout:pay", reference=order.reference)


@never_cache  # "back" after paying asks again, and lands on the order's page
@require_GET
def pay(request: HttpRequest, reference: str) -> HttpResponse:
    order = own_order(request, reference)
    attempts = order_payments(order)  # read once for the whole page
    order = order_expire_if_over(order_as_paid_now(order, attempts))
    # A 3-D Secure challenge still pending as the shop last heard is opened again (a reload);
    # a read of it is queued, within the session's status checks.
    challenge = None
    if order.is_payable:
        challenge = order_pending_challenge(
            order, may_read=lambda: not status_checks_exceeded(request), attempts=attempts
        )
    if not order.is_payable:
        return redirect("checkout:order", reference=reference)
    methods = payment_methods_for(total=order.total)
    patterns = {
        m.id: m.installment_pattern for m in methods if m.available and m.installment_pattern
    }
    return render(
        request,
        "checkout/pay.html",
        _context(
            request,
            order=order,
            methods=methods,
            card_payable=any(m.available for m in methods),
            plans=plans_for(order.total),
            installment_patterns=patterns,
            sdk_url=sdk_url(),
            public_key=settings.PAYMENTS_PUBLIC_KEY,
            theme=settings.PAYMENTS_SDK_THEME,
            locale="en" if get_language() == "en" else "es",
            challenge=challenge,
        ),
    )


@never_cache
@require_GET
def order_detail(request: HttpRequest, reference: str) -> HttpResponse:
    return _order_page(request, own_order(request, reference))


@never_cache
@require_GET
def order_by_link(request: HttpRequest, reference: str, token: str) -> HttpResponse:
    """The order's own link (its mails carry it): its page in any browser, which may then pay
    or follow it as the browser that placed it."""
    return _order_page(request, linked_order(request, reference, token))


def _order_page(request: HttpRequest, order: Order) -> HttpResponse:
    order = order_expire_if_over(order_as_paid_now(order))
    return render(
        request,
        "checkout/order.html",
        _context(
            request,
            order=order,
            items=order.items.all(),
            held=order.status == OrderStatus.AUTHORIZED,
            installments=order_installments(order_payments(order)),
            late_payment=late_payment(order),
            reservation_minutes=settings.SHOP_RESERVATION_MINUTES,
            sections=order_sections(request, order),
        ),
    )


@require_http_methods(["GET", "POST"])
def my_orders(request: HttpRequest) -> HttpResponse:
    """ "Mis pedidos": the links of an address's orders, by mail to that address. The answer is
    the same whether it has orders or not."""
    form = MyOrdersForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        if order_lists_exceeded(request):
            form.add_error(None, _("Too many requests. Please wait a few minutes."))
            context = _context(request, form=form)
            return render(request, "checkout/my_orders.html", context, status=429)
        email = form.cleaned_data["email"]
        language = get_language() or "es"
        try:
            send_now(ORDERS_LIST_MAIL_TASK, (email, language))
        except Exception:  # the broker is down: say so, rather than promise a mail
            form.add_error(None, _("We cannot send mail right now. Please try again later."))
            context = _context(request, form=form)
            return render(request, "checkout/my_orders.html", context, status=503)
        messages.success(
            request,
            _(
                "If there are orders with %(email)s, we have sent it a mail with their links. "
                "It may take a few minutes."
            )
            % {"email": email},
        )
        return redirect("checkout:my_orders")
    return render(request, "checkout/my_orders.html", _context(request, form=form))
