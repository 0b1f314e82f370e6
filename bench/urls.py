"""The shop's URLs, plus the views it is measured against (views.py)."""

from django.urls import include, path

from bench import views

urlpatterns = [
    path("bench/bare/", views.bare),
    path("bench/tutorial/", views.TutorialReceiver.as_view()),
    path("bench/inline/", views.inline),
    path("bench/inline-pay/<str:reference>/", views.inline_pay, name="bench_inline_pay"),
    path("", include("config.urls")),
]
