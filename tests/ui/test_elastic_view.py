"""The reservations view's resize control in real headless Chromium: grow in place, see the
layout verdict, and a refusal as a banner (not an error page)."""

from __future__ import annotations

from typing import Any

from tests.service import ServiceProcess
from tests.ui.test_explorer import gql, open_view


def test_resize_from_the_reservations_view(service: ServiceProcess, page: Any) -> None:
    made = gql(service, 'mutation { reserve(input: {holder: "ui-elastic", ttlSeconds: 600, '
                        'request: {gpus: 4, model: "H100"}}) { ... on Reservation { id } } }')["reserve"]  # fmt: skip
    rid = made["id"]
    try:
        open_view(page, f"{service.url}/ui/#/reservations")
        row = f'#reservations tr[data-id="{rid}"]'
        assert page.input_value(f"{row} input.size") == "4"
        page.fill(f"{row} input.size", "8")
        page.click(f"{row} button.resize")
        page.wait_for_function("document.querySelector('#banner').textContent.startsWith('Resized')")
        assert "to 8 GPUs" in page.inner_text("#banner") and "layout kept" in page.inner_text("#banner")
        page.wait_for_selector(f'{row} input.size[value="8"]', timeout=30_000)
        page.fill(f"{row} input.size", "100000")
        page.click(f"{row} button.resize")
        page.wait_for_function("document.querySelector('#banner').classList.contains('error')")
        assert "between 1 and 4096" in page.inner_text("#banner")
    finally:
        gql(service, "mutation($id: String!) { release(id: $id) { __typename } }", {"id": rid})
