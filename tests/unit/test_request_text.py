"""The compact text form: one parser for the CLI and GraphQL, and its canonical printer."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphsvc.placement.request import (
    NVLinkRequirement,
    Packing,
    PlacementRequest,
    RequestError,
    format_request,
    parse_request,
)


def test_the_issue_example() -> None:
    r = parse_request("8xH100 nvlink=full-mesh ib-hops<=1")
    assert (r.gpus, r.model, r.nvlink, r.max_ib_hops) == (8, "H100", NVLinkRequirement.FULL_MESH, 1)


def test_every_option() -> None:
    r = parse_request(
        "32xH100 per-host=8 rail-aligned nic-affinity mem>=80GiB temp<=85C same-domain allow-unhealthy "
        "exclude=a,b prefer=c packing=spread limit=5 nvlink=any"
    )
    assert r.gpus_per_host == 8 and r.rail_aligned and r.gpu_nic_affinity and r.same_nvlink_domain
    assert (r.min_memory_gib, r.max_temperature_c, r.exclude_unhealthy) == (80, 85, False)
    assert (r.exclude_hosts, r.prefer_hosts, r.packing, r.limit) == (("a", "b"), ("c",), Packing.SPREAD, 5)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "empty request"),
        ("H100", "start with a GPU count"),
        ("8 nvlink=lots", "nvlink is none, any or full-mesh"),
        ("8 ib-hops>=1", "use <= or = with ib-hops"),
        ("8 mem>=lots", "is not a number"),
        ("8 wat", "unknown option"),
        ("8 nvlnk=full-mesh", "unknown option 'nvlnk'; did you mean 'nvlink'\\?"),
        ("8 same-domian", "did you mean 'same-domain'\\?"),
        ("8 foo=1", r"unknown option 'foo' \(options: nvlink=, scale-up=, per-host="),
        ("8 per-host=3", "cannot be split evenly"),
        ("9999", "between 1 and 4096"),
        # Non-finite and huge numbers were a 500 with a traceback (a store parameter nothing took).
        *[(f"8xH100 {o}", "is not a whole number") for o in ("ib-hops<=inf", "limit=nan", "per-host=inf",
                                                             "link-gen>=inf", "ib-hops<=1.5", "limit=1e3")],
        *[(f"8 {o}", "is not a number") for o in ("mem>=nan", "mem>=inf", "temp<=nan", "temp<=-inf", "mem>=1_0",
                                                  "mem-bw>=nan")],
        # Other scripts' digits: \\d and int() take them (a probe's `８xH100`, `limit=٣`).
        *[(t, "start with a GPU count") for t in ("８xH100", "٨xH100", "٨", "2x 3g.٤0gb")],
        *[(f"8xH100 {o}", r"is not a whole number \(digits 0-9, at most 9\)")
          for o in ("limit=٣", "ib-hops<=１", "per-host=٤", "limit=99999999999999999999")],
        ("8 mem>=٨0", "is not a number"),
        ("8 mem>=1e308", "minMemoryGiB: must be between 0 and 1000000 GiB"),
        ("8 temp<=1e9", "maxTemperatureC: must be between -273 and 1000"),
        ('2x"Acme X1', "No closing quotation: close each quote"),
        ("8 exclude=", "'exclude=': give exclude a value"),
        ("8 limit=", "'limit=': give limit a value"),
        # A repeated option took the last value silently: `nvlink=full-mesh nvlink=none` asked for none.
        ("8xH100 nvlink=full-mesh nvlink=none", "'nvlink=none': nvlink given twice; give each option once"),
        ("8 nvlink=any xgmi=none", r"'xgmi=none': nvlink given twice \(as xgmi\)"),
        ("8xH100 model=A100", "model given twice"),
        ("8 exclude=a exclude=b", "exclude given twice"),
        ("8 prefer=a prefer-hosts=b", r"prefer given twice \(as prefer-hosts\)"),
        ("8 site=a sites=b", "site given twice"),
        ("8 mem>=40 memory>=80", "mem given twice"),
        ("8 temp<=80 temp<=90", "temp given twice"),
        ("8 ib-hops<=1 hops<=3", "ib-hops given twice"),
        ("8 per-host=4 per-host=8", "per-host given twice"),
        ("8 limit=2 limit=5", "limit given twice"),
        ("8 packing=spread packing=best-fit", "packing given twice"),
        ("8 cc>=9.0 cc>=8.0", "cc given twice"),
        ("8 mem-bw>=1 memory-bandwidth>=2", "mem-bw given twice"),
        ("8 link-gen>=4 nvlink-gen>=5", "link-gen given twice"),
    ],
)  # fmt: skip
def test_errors_say_what_is_wrong(text: str, needle: str) -> None:
    with pytest.raises(RequestError, match=needle):
        parse_request(text)


requests = st.builds(
    PlacementRequest,
    gpus=st.sampled_from([1, 2, 4, 8, 16, 64]),
    model=st.sampled_from([None, "H100", "GB200", "A100", "Acme X1", "O'Brien 2", 'say "hi"']),
    min_memory_gib=st.sampled_from([None, 40.0, 80.0]),
    nvlink=st.sampled_from(list(NVLinkRequirement)),
    gpus_per_host=st.sampled_from([None, 1, 2]),
    max_ib_hops=st.sampled_from([None, 0, 1, 3]),
    same_nvlink_domain=st.booleans(),
    rail_aligned=st.booleans(),
    gpu_nic_affinity=st.booleans(),
    max_temperature_c=st.sampled_from([None, 70.0, 85.5]),
    exclude_unhealthy=st.booleans(),
    exclude_hosts=st.sampled_from([(), ("h1",), ("h1", "h2"), ("o'brien", "a b")]),
    limit=st.integers(1, 20),
    prefer_hosts=st.sampled_from([(), ("h3",)]),
    packing=st.sampled_from(list(Packing)),
    cooler_gpus=st.booleans(),
    sites=st.sampled_from([(), ("s1",), ("s1", "s2")]),
    cross_site=st.booleans(),
)


def _valid(req: PlacementRequest) -> bool:
    try:
        req.validated()
    except RequestError:
        return False
    return True


@given(requests.filter(_valid))
def test_format_then_parse_is_identity(req: PlacementRequest) -> None:
    assert parse_request(format_request(req)) == req


@given(st.text(max_size=200))
def test_any_text_parses_or_says_why(text: str) -> None:
    try:
        parse_request(text)
    except RequestError as err:
        problem = (err.field, err.message)
        assert all(problem)


def test_a_model_name_with_a_space_is_quoted() -> None:
    """A GPU model such as `Acme X1` could be reserved through GraphQL's model field only: the
    text form split it into two words, and the request GraphQL echoed did not parse back."""
    assert parse_request('2x"Acme X1" limit=5').model == "Acme X1"
    assert parse_request("2 model='Acme X1'").model == "Acme X1"
    assert format_request(PlacementRequest(gpus=2, model="Acme X1")) == "2x'Acme X1'"
    # Without a quote the text splits as str.split does (a no-break space too), and a backslash
    # is a character, not an escape.
    assert parse_request("8xH100\u00a0nvlink=full-mesh").model == "H100"
    assert parse_request('8 exclude=a\\b site="x y"').exclude_hosts == ("a\\b",)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"exclude_hosts": ("n1,n2",)}, "excludeHosts"),
        ({"prefer_hosts": ("h1", "n1,n2")}, "preferences.hosts"),
        ({"sites": ("s1,s2",)}, "sites"),
    ],
)
def test_a_listed_name_with_a_comma_is_refused(change: dict[str, tuple[str, ...]], field: str) -> None:
    """No host or site name holds a comma, so such an entry matched nothing; and printed it read
    as two names: `excludeHosts: ["n1,n2"]` (nothing excluded) shared a text form, and so an
    idempotency fingerprint, with `["n1", "n2"]`."""
    with pytest.raises(RequestError) as err:
        PlacementRequest(gpus=2, **change).validated()  # type: ignore[arg-type]
    assert err.value.field == field and "comma" in err.value.message
    PlacementRequest(gpus=2, exclude_hosts=("n1", "n2"), prefer_hosts=("h1",), sites=("s1",)).validated()


def test_bounds_print_as_given() -> None:
    """`:g` kept 6 significant digits: a reservation's request text lost `mem-bw>=3350.001`."""
    for text in ("1 mem-bw>=3350.001", "1 temp<=85.0000004", "1 mem>=70.00000001", "1 temp<=-0.5", "1 mem>=80"):
        req = parse_request(text)
        assert format_request(req) == text and parse_request(format_request(req)) == req


@pytest.mark.parametrize(
    "text",
    ["8xH100 rail-aligned rail-aligned", "2x 3g.40gb model=H100", "8 fp8 fp8", "8 same-domain nvlink=any",
     "8xH100 mem>=79 cc>=9.0 exclude=a,b prefer=c site=s limit=4"],
)  # fmt: skip
def test_what_is_not_a_repeat(text: str) -> None:
    """A flag twice is the flag, and a MIG count's profile is not its model."""
    parse_request(text)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("8 exclude=a\x00b", "excludeHosts"),
        ("8 exclude=ok,n\x1b[31m", "excludeHosts"),
        ("8 prefer=h\u202e1", "preferences.hosts"),
        ("8 site=s\x7f", "sites"),
        ("8 site=s\u200f", "sites"),
    ],
)
def test_an_unprintable_name_is_refused_naming_its_field(text: str, field: str) -> None:
    """A NUL in an excluded host reached the store: Neo4j matched nothing and reserved, FalkorDB
    refused the statement (an untyped 422). The rule is the facts' and the reservations'."""
    with pytest.raises(RequestError) as err:
        parse_request(text)
    assert err.value.field == field and "control character" in err.value.message
    with pytest.raises(RequestError) as err:
        PlacementRequest(gpus=2, prefer_hosts=("h1", "h\x002")).validated()
    assert err.value.field == "preferences.hosts"
    assert parse_request("8 exclude=n\u00e9-1,\u30ce\u30fc\u30c9").exclude_hosts == ("n\u00e9-1", "\u30ce\u30fc\u30c9")
