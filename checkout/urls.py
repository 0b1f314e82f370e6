from django.urls import path

from checkout import api, views

app_name = "checkout"

urlpatterns = [
    path("", views.home, name="home"),
    path("productos/<slug:slug>/", views.product_detail, name="product"),
    path("carrito/", views.cart_view, name="cart"),
    path("carrito/agregar/<slug:slug>/", views.cart_add, name="cart_add"),
    path("carrito/actualizar/<slug:slug>/", views.cart_update, name="cart_update"),
    path("carrito/quitar/<slug:slug>/", views.cart_remove, name="cart_remove"),
    path("checkout/", views.checkout, name="checkout"),
    path("pedidos/<str:reference>/", views.order_detail, name="order"),
    path("pedido/<str:reference>/<str:token>/", views.order_by_link, name="order_link"),
    path("mis-pedidos/", views.my_orders, name="my_orders"),
    path("pedidos/<str:reference>/pagar/", views.pay, name="pay"),
    path("pedidos/<str:reference>/pagos/", api.PayAttemptView.as_view(), name="pay_attempt"),
    path(
        "pedidos/<str:reference>/estado-pago/",
        api.PaymentStatusView.as_view(),
        name="payment_status",
    ),
]
