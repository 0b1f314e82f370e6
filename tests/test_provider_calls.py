"""No web request calls the provider: no module that serves a URL can reach the provider's
client (`payments.provider.client`).

The approach: walk the URL conf the shop serves (`config.urls`, recursively through every
`include`), and for each pattern find the modules of the code that answers it:

- the view function's own module, and that of every function it wraps (`__wrapped__`, set by
  `functools.wraps` in Django's and the shop's decorators, and by `AdminSite.admin_view`);
- a class-based view's class (`view_class`, and DRF's `cls`);
- a bound method's object (`__self__`: the admin's views are methods of the `AdminSite` or of a
  `ModelAdmin`);
- for the admin, besides its URLs: every registered `ModelAdmin` class and the admin site's own
  class, whose methods (actions, changelist, change form) run inside the admin's requests.

Then, on the import graph of the shop's packages (grimp, as import-linter builds it: imports
inside functions count too), assert that none of these modules imports `payments.provider.client`,
directly or through any chain. A module that does not import the client cannot call it; the
provider is called only by Celery tasks, which the URL conf never reaches.

Modules outside the shop's packages are not in the graph. They are named below with the reason
they may be left out (they are the frameworks' own code, which knows nothing of the shop); any
other module outside the graph fails the test rather than being skipped.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import grimp
from django.contrib import admin
from django.urls import URLPattern, URLResolver, get_resolver

SHOP_PACKAGES = (
    "checkout",
    "payments",
    "webhooks",
    "config",
    "core",
    "staff_actions",
    "staff_signin",
    "dashboard",
    "monitoring",
    "books",
)
CLIENT = "payments.provider.client"

# Frameworks whose views serve some of the shop's URLs. Their modules are not in the shop's
# import graph, and they cannot import the shop's client (they know nothing of the shop); the
# shop's code they call back into (ModelAdmin classes, DRF views, the schema view's settings)
# is walked on its own.
FRAMEWORKS = {
    "django": "Django's own views: the admin site's login, logout, password and index, i18n's "
    "set_language, and the decorators wrapping every view",
    "rest_framework": "DRF's APIView machinery, under the shop's API views",
    "drf_spectacular": "the OpenAPI schema view, under core.api.SchemaView",
}

# Views that must be found, or the walk itself is broken (module, qualified name).
KEY_VIEWS = {
    ("checkout.api", "PayAttemptView"): "the pay attempt API",
    ("checkout.api", "PaymentStatusView"): "the payment status API",
    ("webhooks.views", "payment_notification"): "the webhook receiver",
    ("monitoring.probes", "DependenciesView"): "the dependencies probe",
    ("checkout.views", "pay"): "the payment page",
}


@dataclass(frozen=True)
class Found:
    module: str
    name: str
    route: str


def _route(prefix: str, pattern: URLPattern | URLResolver) -> str:
    return prefix + str(pattern.pattern)


def _address(route: str) -> str:
    return "/" + route.removeprefix("/")


def _code_of(view: Any, route: str) -> Iterator[Found]:
    """The modules of a view and of everything it wraps or belongs to."""
    seen: set[int] = set()
    pending = [view]
    while pending:
        obj = pending.pop()
        if obj is None or id(obj) in seen:
            continue
        seen.add(id(obj))
        owner = getattr(obj, "__self__", None)
        if owner is not None and not inspect.ismodule(owner):
            owner_class = owner if inspect.isclass(owner) else type(owner)
            yield Found(owner_class.__module__, owner_class.__qualname__, route)
        if inspect.isclass(obj):
            yield Found(obj.__module__, obj.__qualname__, route)
        elif getattr(obj, "__module__", None):
            yield Found(obj.__module__, getattr(obj, "__qualname__", repr(obj)), route)
        for attribute in ("__wrapped__", "view_class", "cls", "__func__"):
            pending.append(getattr(obj, attribute, None))


def _walk(patterns: list[Any], prefix: str = "") -> Iterator[Found]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _walk(pattern.url_patterns, _route(prefix, pattern))
        elif isinstance(pattern, URLPattern):
            yield from _code_of(pattern.callback, _route(prefix, pattern))
        else:
            raise AssertionError(f"an unknown kind of URL pattern at {prefix}: {pattern!r}")


def _admin() -> Iterator[Found]:
    site_class = type(admin.site)
    yield Found(site_class.__module__, site_class.__qualname__, "admin/ (the site)")
    for model, model_admin in admin.site._registry.items():
        admin_class = type(model_admin)
        route = f"admin/{model._meta.app_label}/{model._meta.model_name}/"
        yield Found(admin_class.__module__, admin_class.__qualname__, route)


@cache
def found() -> tuple[Found, ...]:
    """Everything the URL conf reaches, the admin's registered classes included."""
    return (*_walk(get_resolver("config.urls").url_patterns), *_admin())


@cache
def graph() -> Any:
    return grimp.build_graph(*SHOP_PACKAGES, cache_dir=None)


def _is_shop(module: str) -> bool:
    return module.split(".")[0] in SHOP_PACKAGES


def test_the_walk_finds_the_views_that_matter() -> None:
    """The walk reaches the pay attempt and status APIs, the webhook receiver, the payment page,
    the probe, and the admin of payments and of orders: a walk that found nothing would prove
    nothing."""
    from checkout.models import Order
    from payments.models import Payment

    names = {(f.module, f.name) for f in found()}
    missing = [what for key, what in KEY_VIEWS.items() if key not in names]
    assert not missing, f"the URL walk did not find {missing}"
    for model in (Payment, Order):
        model_admin = type(admin.site._registry[model])
        assert (model_admin.__module__, model_admin.__qualname__) in names, model
    shop_admins = {"payments.admin.payment_admin", "checkout.admin", "webhooks.admin"}
    assert shop_admins <= {f.module for f in found()}


def test_every_module_outside_the_shop_is_a_framework_named_with_its_reason() -> None:
    """Nothing is left out silently: a view module that is not the shop's is one of the
    frameworks named above."""
    unknown = sorted(
        {
            f.module
            for f in found()
            if not _is_shop(f.module) and f.module.split(".")[0] not in FRAMEWORKS
        }
    )
    assert not unknown, f"view modules neither the shop's nor a named framework's: {unknown}"


def test_no_view_module_can_reach_the_provider_client() -> None:
    """No module serving a URL (or an admin page) imports `payments.provider.client`, however
    indirectly: the provider is called only from Celery tasks."""
    import_graph = graph()
    routes: dict[str, set[str]] = {}
    for f in found():
        if _is_shop(f.module):
            routes.setdefault(f.module, set()).add(f.route)
    chains = {}
    for module in sorted(routes):
        assert module in import_graph.modules, f"{module} is not in the import graph"
        chain = import_graph.find_shortest_chain(importer=module, imported=CLIENT)
        if chain is not None:
            chains[module] = chain
    report = "\n".join(
        f"{module} (serving {', '.join(_address(r) for r in sorted(routes[module])[:3])}):\n    "
        + " -> ".join(chain)
        for module, chain in chains.items()
    )
    assert not chains, f"view modules that reach {CLIENT}:\n{report}"
