from django.urls import path

from checkout import views

app_name = "checkout"

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
]
