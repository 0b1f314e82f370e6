from django.urls import path

from webhooks import views

app_name = "webhooks"

urlpatterns = [
    path("payments/<str:token>/", views.payment_notification, name="payments"),
]
