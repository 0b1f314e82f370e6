from django.conf import settings
from django.urls import path, re_path
from django.views.static import serve

from sandbox.provider import control_views, sdk_views, threeds, views

urlpatterns = [
    # The provider API, at the spec's paths.
    path("card_tokens", views.CardTokensView.as_view()),
    path("payments", views.PaymentsView.as_view()),
    path("payments/<str:payment_id>", views.PaymentDetailView.as_view()),
    path("payment_methods", views.PaymentMethodsView.as_view()),
    path("subscriptions/<str:subscription_id>", views.SubscriptionView.as_view()),
    path("refunds", views.RefundsView.as_view()),
    # Browser pages and assets on the sandbox origin.
    path("3ds/<str:challenge_id>", threeds.challenge, name="threeds"),
    path("sdk/v1/checkout.js", sdk_views.sdk_script),
    path("sdk/v1/card", sdk_views.card_frame),
    path("sdk/v1/playground", sdk_views.playground),
    re_path(r"^static/(?P<path>.*)$", serve, {"document_root": settings.STATIC_ROOT}),
    path("healthz", views.healthz),
    # Control endpoints (secret token only).
    path("_sandbox/reset", control_views.ResetView.as_view()),
    path("_sandbox/clock", control_views.ClockView.as_view()),
    path("_sandbox/faults", control_views.FaultsView.as_view()),
    path("_sandbox/payments", control_views.PaymentsListView.as_view()),
    path("_sandbox/webhooks", control_views.WebhooksView.as_view()),
    path("_sandbox/webhooks/chaos", control_views.ChaosView.as_view()),
    path("_sandbox/quirks", control_views.QuirksView.as_view()),
    path("_sandbox/rate_limits", control_views.RateLimitsView.as_view()),
    path("_sandbox/subscriptions", control_views.SandboxSubscriptionsView.as_view()),
    path(
        "_sandbox/payment_methods/<str:method_id>", control_views.SandboxPaymentMethodView.as_view()
    ),
]
