"""The shop's URLs plus the bare view the receiver is measured against."""

from django.urls import include, path

from bench import views

urlpatterns = [
    path("bench/bare/", views.bare, name="bench-bare"),
    path("", include("config.urls")),
]
