from tests.helpers.provider import VISA, Api


def test_a_card_pays_through_the_live_sandbox(api: Api) -> None:
    """Given a tokenized test card, when the merchant creates a payment, it is approved."""
    payment = api.create_payment(VISA)
    assert payment["status"] == "approved"
    assert payment["status_detail"]["code"] == "AP-PAI01"
