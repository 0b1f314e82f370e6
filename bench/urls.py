"""The shop's URLs plus the receivers it is measured against, and the inline pay attempt."""

from django.urls import include, path

from bench import inline_peer, views

urlpatterns = [
    path("bench/bare/", views.bare),
    path("bench/tutorial/", views.TutorialReceiver.as_view()),
    path("bench/inline/", views.inline),
    path("bench/inline-pay/<str:reference>/", inline_peer.inline_pay, name="bench_inline_pay"),
    path("", include("config.urls")),
]
