"""The request's site options: text form, GraphQL input, the client's translation."""

from __future__ import annotations

import pytest

from graphsvc.api.graphql.inputs import PlacementRequestInput
from graphsvc.client import request_input
from graphsvc.placement.request import RequestError, format_request, parse_request


def test_site_options_in_the_text_form() -> None:
    r = parse_request("64xH100 per-host=8 site=onprem-dc1,aws-us-east-1 cross-site")
    assert r.sites == ("onprem-dc1", "aws-us-east-1") and r.cross_site
    assert r.site_set == frozenset({"onprem-dc1", "aws-us-east-1"})
    assert format_request(r) == "64xH100 per-host=8 cross-site site=onprem-dc1,aws-us-east-1"
    assert not parse_request("8").cross_site and parse_request("8").sites == ()


def test_too_many_sites_are_refused() -> None:
    with pytest.raises(RequestError, match="sites"):
        parse_request("8 site=" + ",".join(f"s{i}" for i in range(101)))


def test_graphql_input_and_client_carry_the_sites() -> None:
    sent = request_input("8 site=a,b cross-site")
    assert sent["sites"] == ["a", "b"] and sent["allowCrossSite"] is True
    made = PlacementRequestInput(gpus=8, sites=["a"], allow_cross_site=True).to_request()
    assert made.sites == ("a",) and made.cross_site
