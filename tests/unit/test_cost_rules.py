"""The query cost's rules, one table per rule (graphsvc/api/graphql/cost.py; docs/deploy.md, Limits).

A probe (stop 63) ran fifteen 4,096-GPU placements, refused at 7,710 in their plain form, by
pricing them some other way: nested 21 inline fragments deep (priced 0), through a variable's
default (45), or with the request text quoted or after a non-ASCII space (1 GPU each). Fields
that run a placement search were priced 1 (shapedPlacement, sitePlacement, compareSites,
preempt, resize). Each row below prices a form as its plain form, or a field by the GPUs it
searches for. The price is computed before anything runs, so these are pure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from graphql import (
    FieldNode,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    OperationDefinitionNode,
    parse,
)

from graphsvc.api.graphql import cost, walk
from graphsvc.api.graphql.cost import MAX_SITES, CostUnknown, field_cost, operation_cost
from graphsvc.api.graphql.schema import schema

FULL = 514  # one 4,096-GPU search: 2 + 4096 / 8
COMPARE = 5  # compareSites' searches per site: one now, up to 4 more for a full site (cost.COMPARE_SEARCHES)
PLAIN = 15 * FULL  # fifteen of them: the plain form every bypass below must cost
FIELDS = " ".join(f"p{i}: placement(request: {{gpus: 4096}}) {{ request }}" for i in range(15))


def fifteen(field: str) -> str:
    return " ".join(f"p{i}: {field}" for i in range(15))


def short(text: str) -> str:
    return ascii(text)[:24]


def nested(depth: int) -> str:
    return "{ " + "... on Query { " * depth + FIELDS + " }" * depth + " }"


def chain(length: int) -> str:
    """Named fragments spreading each other `length` deep, the fields in the last."""
    frags = " ".join(f"fragment F{i} on Query {{ ...F{i + 1} }}" for i in range(length))
    return f"{{ ...F0 }} {frags} fragment F{length} on Query {{ {FIELDS} }}"


@pytest.mark.parametrize(
    "query",
    [
        "{ " + FIELDS + " }",
        nested(1),
        nested(20),
        nested(21),  # the walk stopped at 20 and priced what lay deeper at 0
        nested(100),
        chain(25),
        # A field runs once per response key (graphql-core merges fields of one key), however often
        # a fragment or nesting repeats it: priced once, as it runs.
        "{ ...A ...A ... on Query { ...A } } fragment A on Query { " + FIELDS + " }",
        "{ " + FIELDS + " ... on Query { " + FIELDS + " ... on Query { " + FIELDS + " } } }",
    ],
    ids=["plain", "1 fragment", "20 fragments", "21 fragments", "100 fragments", "25 named", "spread 3x", "repeated"],
)
def test_fragments_are_priced_as_the_plain_form(query: str) -> None:
    assert operation_cost(parse(query), None, None) == PLAIN


def test_a_document_whose_fields_cannot_all_be_found_is_refused_not_priced_zero() -> None:
    with pytest.raises(CostUnknown, match="Missing"):
        operation_cost(parse("{ ...Missing }"), None, None)


@pytest.mark.parametrize(
    ("query", "variables", "cost"),
    [
        ("query($g: Int = 4096) { placement(request: {gpus: $g}) { request } }", None, FULL),
        ("query($g: Int = 4096) { placement(request: {gpus: $g}) { request } }", {}, FULL),
        ("query($g: Int = 4096) { placement(request: {gpus: $g}) { request } }", {"g": 8}, 3),  # given wins
        ("query($g: Int = 4096) { " + fifteen("placement(request: {gpus: $g}) { request }") + " }", {}, PLAIN),
        ("query($r: PlacementRequestInput = {gpus: 4096}) { placement(request: $r) { request } }", {}, FULL),
        ('query($t: String = "4096xH100") { placementText(text: $t) { request } }', {}, FULL),
        ("query($f: Int = 500) { gpus(first: $f) { nodes { uuid } } }", {}, 6),
        ("query($f: Int = 500) { " + fifteen("gpus(first: $f) { nodes { uuid } }") + " }", {}, 15 * 6),
        ("query($s: ShapedRequestInput = {tp: 8, dp: 512}) { shapedPlacement(shape: $s) { request } }", {}, FULL),
        ('mutation($n: Int = 4096) { resize(id: "r", gpus: $n) { __typename } }', {}, FULL),
    ],
)
def test_a_variables_default_is_priced_as_the_value_written_inline(
    query: str, variables: dict[str, Any] | None, cost: int
) -> None:
    assert operation_cost(parse(query), None, variables) == cost


SPELLINGS = [
    "4096xH100",
    "'4096'xH100",
    '"4096xH100"',
    "\u30004096xH100",  # ideographic space
    "\u00a04096xH100",  # no-break space
    "\x1c4096xH100",  # file separator: str.split's whitespace
    "4096xH100\u2003nvlink=full-mesh",
    "0000000004096xH100",
]


@pytest.mark.parametrize("text", SPELLINGS, ids=short)
def test_a_request_text_is_priced_by_what_the_parser_reads(text: str) -> None:
    assert field_cost("placementText", {"text": text}) == FULL
    assert field_cost("compareSites", {"text": text, "sites": ["a"], "profile": {}}) == COMPARE * FULL
    # GraphQL, as a client would write the text in the document.
    assert (
        operation_cost(
            parse("{ " + fifteen(f"placementText(text: {json.dumps(text)}) {{ request }}") + " }"), None, None
        )
        == PLAIN
    )


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "x",
        "'4096xH100",
        "4097xH100",
        "9" * 50,
        "\u0664\u0660\u0669\u0666xH100",
        "8 bogus=1",
        "0" * 5000 + "8",
    ],
    ids=short,
)
def test_a_text_the_parser_refuses_costs_the_base_it_is_answered_unsearched(text: str) -> None:
    assert field_cost("placementText", {"text": text}) == 2


@pytest.mark.parametrize(
    ("name", "args", "cost"),
    [
        # shapedPlacement reads every candidate host whatever the job's size: as a 4,096-GPU search.
        ("shapedPlacement", {"text": "tp=8 dp=512 model=H100"}, FULL),
        ("shapedPlacement", {"text": "tp=8 pp=4 dp=2"}, FULL),
        ("shapedPlacement", {"text": "groups=64 group-size=8"}, FULL),
        ("shapedPlacement", {"shape": {"tp": 8, "dp": 512, "model": "H100"}}, FULL),
        ("shapedPlacement", {"shape": {"tp": 8, "pp": 2}}, FULL),
        ("shapedPlacement", {"text": "tp=8 dp=513"}, 2),  # more than 4,096 ranks: refused unsearched
        ("shapedPlacement", {"shape": {"tp": 8, "dp": 0}}, 2),
        ("shapedPlacement", {"text": "dp=8"}, 2),  # no tp: refused unsearched
        ("shapedPlacement", {"text": "tp=8", "shape": {"tp": 8}}, 2),  # both: refused unsearched
        ("shapedPlacement", {}, 2),
        # sitePlacement: one search, as placement.
        ("sitePlacement", {"request": {"gpus": 4000, "railAligned": True}}, 2 + 500),
        ("sitePlacement", {"request": {"gpus": 4096}, "sites": ["a", "b"], "allowCrossSite": True}, FULL),
        ("sitePlacement", {"request": {"gpus": 5000}}, 2),
        # compareSites: COMPARE searches per site compared (one now, the rest for a full site); every
        # site of the catalogue unless named (the largest catalogue where the count is not given:
        # test_compare_sites_naming_none_...).
        ("compareSites", {"text": "4096xH100", "sites": ["a", "b"]}, 2 * COMPARE * FULL),
        ("compareSites", {"text": "4096xH100"}, MAX_SITES * COMPARE * FULL),
        ("compareSites", {"text": "4096xH100", "sites": []}, MAX_SITES * COMPARE * FULL),
        ("compareSites", {"request": {"gpus": 64}, "sites": ["a", "a"]}, COMPARE * (2 + 8)),  # one site, twice
        ("compareSites", {"request": {"gpus": 64}, "sites": "a"}, COMPARE * (2 + 8)),
        ("compareSites", {"request": {"gpus": 4000}, "sites": ["a", "b", "c", "d"]}, 4 * COMPARE * 502),
        ("compareSites", {"text": "8 bogus=1", "sites": ["a", "b"]}, 2),  # refused before any site
        ("compareSites", {"request": {"gpus": 5000}}, 2),
        ("compareSites", {"request": {"gpus": 8}, "text": "8"}, 2),  # both: refused unsearched
        # preempt: reserves the request's GPUs (and plans a preemption only when nothing is free).
        ("preempt", {"input": {"holder": "h", "request": {"gpus": 4096}, "priority": 9}}, FULL),
        ("preempt", {"input": {"holder": "h", "request": {"gpus": 16}, "priority": 9}}, 2 + 2),
        # resize: growing searches for up to the new size; removing named GPUs or ranks searches nothing.
        ("resize", {"id": "r", "gpus": 4096}, FULL),
        ("resize", {"id": "r", "gpus": 16}, 2 + 2),
        ("resize", {"id": "r", "gpus": 5000}, 2),
        ("resize", {"id": "r", "remove": ["GPU-1"]}, 1),
        ("resize", {"id": "r", "removeRanks": [0, 1]}, 1),
    ],
)
def test_a_field_that_searches_is_priced_by_the_gpus_it_searches_for(
    name: str, args: dict[str, Any], cost: int
) -> None:
    assert field_cost(name, args) == cost


@pytest.mark.parametrize(
    ("kind", "field"),
    [
        ("query", 'shapedPlacement(text: "tp=8 dp=512 model=H100") { request }'),
        ("query", "shapedPlacement(shape: {tp: 8, dp: 512}) { request }"),
        ("query", 'shapedPlacement(text: "tp=8 dp=8") { request }'),  # as long as tp=8 dp=512 (cost.py)
        ("query", "sitePlacement(request: {gpus: 4096}) { __typename }"),
        ("query", 'compareSites(profile: {gpuHours: 1}, text: "4096xH100", sites: ["a"]) { __typename }'),
        ("mutation", 'preempt(input: {holder: "h", request: {gpus: 4096}, priority: 1}) { __typename }'),
        ("mutation", 'resize(id: "r", gpus: 4096) { __typename }'),
    ],
    ids=["shaped text", "shaped fields", "shaped 64 GPUs", "sitePlacement", "compareSites", "preempt", "resize"],
)
def test_fifteen_searches_of_any_kind_cost_what_fifteen_placements_do(kind: str, field: str) -> None:
    searches = COMPARE if field.startswith("compareSites") else 1  # a full site is searched again
    assert operation_cost(parse(f"{kind} {{ {fifteen(field)} }}"), None, None) == searches * PLAIN


def _named(t: GraphQLInputType) -> Any:
    while isinstance(t, GraphQLNonNull | GraphQLList):
        t = t.of_type
    return t


def _huge(t: GraphQLInputType) -> Any:
    """A value of input type `t` whose every PlacementRequestInput asks for 4,096 GPUs, or None
    where `t` holds none."""
    named = _named(t)
    if not isinstance(named, GraphQLInputObjectType):
        return None
    if named.name in ("PlacementRequestInput", "ShapedRequestInput"):
        return {"gpus": 4096} if named.name == "PlacementRequestInput" else {"tp": 8, "dp": 512}
    inner = {name: _huge(f.type) for name, f in named.fields.items()}
    return {k: v for k, v in inner.items() if v is not None} or None


def test_every_root_field_taking_a_placement_request_is_priced_by_its_gpus() -> None:
    """A new field that runs a search must be priced: a guard on the schema, not a list to keep."""
    gql = schema._schema
    checked = []
    for root in (gql.query_type, gql.mutation_type):
        assert isinstance(root, GraphQLObjectType)
        for name, field in root.fields.items():
            args = {a: v for a, v in ((a, _huge(arg.type)) for a, arg in field.args.items()) if v is not None}
            if args:
                checked.append(name)
                assert field_cost(name, args) >= FULL, name
    assert {
        "placement",
        "preemptionPlan",
        "reserve",
        "preempt",
        "sitePlacement",
        "compareSites",
        "shapedPlacement",
    } <= set(checked)


def test_every_priced_field_is_in_the_documented_table() -> None:
    """One table (docs/deploy.md, Limits) says every price; a field priced here and not there
    would be a price nobody can read."""
    deploy = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text(encoding="utf-8")
    table = "\n".join(line for line in deploy.splitlines() if line.startswith("| `"))
    priced = {
        *cost.FIXED,
        *cost.PAGED,
        *cost.PLACEMENT_LIKE,
        "placementText",
        "shapedPlacement",
        "compareSites",
        "resize",
        "search",
        "gpuGrid",
    }
    assert {f for f in priced if f"`{f}`" not in table} <= {"host", "events", "__type"}
    assert "the sites the catalogue holds when none are" in table


# Fields that were priced 1 whatever they read. Each is priced by its work (cost.py says what was
# measured): a page by its rows, a search by its text, a field that reads the whole cluster or a
# whole job, whose size the price cannot know, as the work it measured or the largest search.
@pytest.mark.parametrize(
    ("name", "args", "price"),
    [
        ("gpuGrid", {}, 1 + 5000 // 100),  # its default page: 5,000 rows
        ("gpuGrid", {"first": 5000}, 51),
        ("gpuGrid", {"first": 100}, 2),
        ("gpuGrid", {"first": 10**9}, 51),  # the resolver serves at most 5,000 rows
        ("gpuGrid", {"first": 0}, 1),
        ("search", {"text": "h100-su1"}, 3 + 4),
        ("search", {"text": "x" * 64, "first": 100}, 3 + 32),
        ("search", {"text": "x" * 256}, 3 + 128),
        ("search", {"text": "x" * 257}, 1),  # over 256 characters: refused before any read
        ("impact", {"of": {"host": "h"}}, 2 + 1024 // 8),
        ("impact", {"of": {"switch": "s"}}, 2 + 1024 // 8),
        ("nextPhase", {"id": "r"}, FULL),
        ("replaceFailed", {"id": "r"}, FULL),
        ("replaceFailed", {"id": "r", "apply": False}, FULL),
        ("leafLoad", {"cluster": "c"}, 5),  # every GPU of the cluster, as clusterSummary
    ],
)
def test_a_field_that_reads_much_is_priced_by_its_work(name: str, args: dict[str, Any], price: int) -> None:
    assert field_cost(name, args) == price


@pytest.mark.parametrize(
    ("field", "price"),
    [
        ("gpuGrid { rows }", 51),
        ('search(text: "' + "x" * 256 + '", first: 100) { name }', 131),
        ('impact(of: {host: "h"}) { __typename }', 130),
        ('nextPhase(id: "r") { __typename }', FULL),
    ],
    ids=["gpuGrid", "search", "impact", "nextPhase"],
)
def test_fifteen_of_a_field_that_reads_much_add_up(field: str, price: int) -> None:
    assert operation_cost(parse(f"{{ {fifteen(field)} }}"), None, None) == 15 * price


def test_fifteen_replacements_cost_what_fifteen_placements_do() -> None:
    query = "mutation { " + fifteen('replaceFailed(id: "r") { __typename }') + " }"
    assert operation_cost(parse(query), None, None) == PLAIN


@pytest.mark.parametrize(
    ("args", "sites", "price"),
    [
        ({"text": "8xH100", "profile": {}}, 7, 7 * COMPARE * 3),  # every site of the catalogue: 7 of them
        ({"request": {"gpus": 4096}, "profile": {}}, 1, COMPARE * FULL),
        ({"text": "8xH100", "profile": {}}, 0, 2),  # no site defined: refused before any search
        ({"text": "8xH100", "sites": ["a", "b"], "profile": {}}, 7, 2 * COMPARE * 3),  # named: those only
        ({"text": "8xH100", "profile": {}}, MAX_SITES, MAX_SITES * COMPARE * 3),
    ],
)
def test_compare_sites_naming_none_is_priced_by_the_sites_the_catalogue_holds(
    args: dict[str, Any], sites: int, price: int
) -> None:
    """It was priced as 3 sites whatever the catalogue held (up to 1,000)."""
    assert field_cost("compareSites", args, sites) == price
    query = "{ c: compareSites(" + ", ".join(f"{k}: {_literal(v)}" for k, v in args.items()) + ") { __typename } }"
    assert operation_cost(parse(query), None, None, sites) == price


def _literal(value: Any) -> str:
    """A GraphQL literal of a JSON-like value."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    return json.dumps(value)


def test_the_largest_catalogue_is_the_one_the_catalogue_model_allows() -> None:
    from annotated_types import MaxLen

    from graphsvc.sites.catalog import SiteCatalog

    [limit] = [m.max_length for m in SiteCatalog.model_fields["sites"].metadata if isinstance(m, MaxLen)]
    assert limit == MAX_SITES


# The one walk the cost, the depth and alias limits and the latency label share (walk.py).
def test_the_shared_walk_finds_root_fields_through_fragments_each_once() -> None:
    doc = parse(
        '{ a: host(name: "x") { name } ...F ... on Query { ...F b: clusterSummary { hosts } } }'
        ' fragment F on Query { a: host(name: "x") { name }'
        ' ... on Query { fabricPath(fromHost: "a", toHost: "b") { hops } } }'
    )
    op = doc.definitions[0]
    assert isinstance(op, OperationDefinitionNode)
    found = walk.root_fields(op.selection_set, walk.fragments_of(doc))
    assert {k: [f.name.value for f in v] for k, v in found.items()} == {
        "a": ["host", "host"],
        "b": ["clusterSummary"],
        "fabricPath": ["fabricPath"],
    }
    with pytest.raises(walk.UnknownFragment, match="Nope"):
        walk.root_fields(parse("{ ...Nope }").definitions[0].selection_set, {})  # type: ignore[attr-defined]


def test_the_shared_fold_measures_each_fragment_once() -> None:
    """A chain of fragments each spreading the next twice: 2**n paths, n measures."""
    n = 40
    chain = " ".join(f"fragment F{i} on Query {{ a{i}: __typename ...F{i + 1} ...F{i + 1} }}" for i in range(n))
    doc = parse("{ ...F0 } " + chain + f" fragment F{n} on Query {{ __typename }}")
    measured: list[str] = []

    def aliases(field: FieldNode, inner: Any) -> int:
        measured.append(field.name.value)
        return field.alias is not None

    op = doc.definitions[0]
    assert isinstance(op, OperationDefinitionNode)
    assert walk.Fold(walk.fragments_of(doc), aliases, sum)(op.selection_set) == 2**n - 1
    assert len(measured) == n + 1  # each fragment's one field, once
