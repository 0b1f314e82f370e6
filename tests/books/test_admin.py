"""Staff's side in the admin: "Facturas por emitir" lists the paid orders' requests with their
charge, refunds, SAT's payment form (04 credit, 28 debit) and the buyer's data, in a number of
queries that does not grow with its rows; registering the CFDI needs its own permission and
refuses an XML that does not match, changing nothing; files only through permissioned views."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from books.models import FacturaRequest, FacturaState
from checkout.models import OrderEvent, OrderEventKind
from tests.books.helpers import UUID, cfdi, paid_order, requested, staff
from tests.helpers.staff import sign_in_staff

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("in_english")]

TO_ISSUE = reverse("admin:books_facturatoissue_changelist")


def register_url(factura: FacturaRequest) -> str:
    return reverse("admin:books_facturatoissue_register", args=[factura.pk])


def rows(response: Any) -> list[str]:
    return re.findall(r"<tr>.*?</tr>", response.content.decode(), re.S)[1:]


def test_the_list_shows_what_the_invoice_needs(admin_client: Client) -> None:
    credit = requested(paid_order("1290.00", refunded="290.00"))
    debit = requested(paid_order("578.00", method_type="debit_card"))
    requested(paid_order(status="awaiting_payment"))  # not paid: not listed
    issued = requested(paid_order(), state=FacturaState.ISSUED, uuid=UUID)

    response = admin_client.get(TO_ISSUE)

    assert response.status_code == 200
    listed = {f.pk for f in response.context["cl"].result_list}
    assert listed == {credit.pk, debit.pk} and issued.pk not in listed
    page = response.content.decode()
    assert "04 Tarjeta de crédito" in page and "28 Tarjeta de débito" in page
    assert "$1,290.00" in page and "$290.00" in page and "$578.00" in page
    assert "XOJI740919U48" in page and "612 Personas Físicas" in page and "G03 Gastos" in page


def test_the_list_keeps_its_queries_whatever_its_rows(admin_client: Client) -> None:
    spent = []
    for count in (1, 12):
        for _ in range(count - FacturaRequest.objects.count()):
            requested(paid_order())
        admin_client.get(TO_ISSUE)
        with CaptureQueriesContext(connection) as queries:
            response = admin_client.get(TO_ISSUE)
        assert len(response.context["cl"].result_list) == count
        spent.append(len(queries))
    assert spent[0] == spent[1], spent
    assert spent[0] <= 8, spent


def post_register(client: Client, factura: FacturaRequest, xml: bytes, **extra: Any) -> Any:
    return client.post(
        register_url(factura),
        {
            "uuid": UUID,
            "xml": SimpleUploadedFile("cfdi.xml", xml, "application/xml"),
            **extra,
        },
    )


def test_a_matching_xml_is_registered(admin_client: Client) -> None:
    factura = requested(paid_order("1290.00"))
    answer = post_register(admin_client, factura, cfdi("1290.00"))
    assert answer.status_code == 302 and answer["Location"] == TO_ISSUE
    factura.refresh_from_db()
    assert (factura.state, factura.uuid) == (FacturaState.ISSUED, UUID)
    assert OrderEvent.objects.filter(order=factura.order, kind=OrderEventKind.INVOICED).exists()
    assert factura.pk not in {f.pk for f in admin_client.get(TO_ISSUE).context["cl"].result_list}


@pytest.mark.parametrize(
    ("xml", "words"),
    [
        (cfdi("1300.00"), "total is $1,300.00, but the order's charge is $1,290.00"),
        (cfdi("1290.00", rfc="EKU9003173C9"), "is for RFC EKU9003173C9"),
    ],
    ids=["total", "rfc"],
)
def test_an_xml_that_does_not_match_is_refused_on_the_form(
    admin_client: Client, xml: bytes, words: str
) -> None:
    factura = requested(paid_order("1290.00"))
    answer = post_register(admin_client, factura, xml)
    assert answer.status_code == 400
    assert words in html.unescape(answer.content.decode())
    factura.refresh_from_db()
    assert (factura.state, factura.uuid) == (FacturaState.REQUESTED, "")


def test_registering_needs_its_own_permission(client: Client) -> None:
    factura = requested(paid_order())
    sign_in_staff(client, staff("consulta-books", "books.view_facturarequest"))
    assert client.get(TO_ISSUE).status_code == 200
    answer = post_register(client, factura, cfdi())
    assert answer.status_code == 403
    assert "Can register issued invoices" in answer.content.decode()
    assert FacturaRequest.objects.get(pk=factura.pk).state == FacturaState.REQUESTED


def test_starting_locks_the_buyers_data(client: Client) -> None:
    factura = requested(paid_order())
    sign_in_staff(client, staff("emisor", "books.issue_factura"))
    answer = client.post(
        TO_ISSUE, {"action": "start_selected", "_selected_action": [factura.pk]}, follow=True
    )
    assert "1 invoices started" in answer.content.decode()
    assert FacturaRequest.objects.get(pk=factura.pk).state == FacturaState.ISSUING


def test_files_go_through_the_permissioned_view(client: Client, admin_client: Client) -> None:
    factura = requested(paid_order())
    post_register(admin_client, factura, cfdi())
    url = reverse("admin:books_facturarequest_file", args=[factura.pk, "xml"])
    assert admin_client.get(url).content == cfdi()
    sign_in_staff(client, staff("sin-permiso"))
    assert client.get(url).status_code == 403
    assert Client().get(url).status_code == 302  # to the login page
