from django.urls import path

from books import views

app_name = "books"

urlpatterns = [
    path("pedido/<str:reference>/<str:token>/factura/", views.factura_page, name="factura"),
    path(
        "pedido/<str:reference>/<str:token>/factura/<str:kind>/",
        views.factura_file,
        name="factura_file",
    ),
]
