"""The shop's URLs plus the receivers it is measured against."""

from django.urls import include, path

from bench import views

urlpatterns = [
    path("bench/bare/", views.bare),
    path("bench/tutorial/", views.TutorialReceiver.as_view()),
    path("bench/inline/", views.inline),
    path("", include("config.urls")),
]
