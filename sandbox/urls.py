from django.urls import include, path

urlpatterns = [path("", include("sandbox.provider.urls"))]

handler404 = "sandbox.provider.errors.not_found_view"
handler500 = "sandbox.provider.errors.server_error_view"
