"""Shareable links (bindlab.ui.share): the address carries the view, nothing is stored.

Unit tests: a link round-trips through its address, and every parameter a hostile visitor could craft is refused
with a sentence naming it. Browser tests (marked ui): a Browse question and a Grounding α travel through the link
into a fresh page."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest

from bindlab.ui import share
from bindlab.ui.share import Link, build_query, build_url, parse_query


# --- the address: build and read ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "link",
    [
        Link("browse", "minilm", pairing="tt", question="n02-ind-003"),
        Link("browse", "toy:clip", pairing="ti"),
        Link("grounding", "toy:clip", factor="pattern", value="striped", alpha=1.25),
        Link("grounding", "toy:negclip", factor="hue"),
    ],
)
def test_a_link_reads_back_as_it_was_written(link):
    url = build_url("http://host:7860/", link)
    assert url.startswith("http://host:7860/?tab=")
    assert parse_query(url.split("?", 1)[1]) == link


def test_the_address_names_the_view_in_plain_parameters():
    assert (
        build_url("http://host:7860", Link("browse", "minilm", question="n02-ind-003"))
        == "http://host:7860/?tab=browse&model=minilm&pairing=tt&q=n02-ind-003"
    )
    assert (
        build_query(Link("grounding", "toy:clip", value="striped", alpha=1.25))
        == "?tab=grounding&model=toy:clip&factor=pattern&value=striped&alpha=1.25"
    )


def test_no_link_in_an_address_without_one_gradios_own_parameters_ignored():
    assert parse_query("") is None
    assert parse_query("?__theme=dark&view=api") is None
    assert parse_query("?tab=browse&model=bow&__theme=dark") == Link("browse", "bow")


def test_a_page_address_that_is_not_plain_http_gives_a_relative_link():
    link = Link("browse", "bow")
    for base in ("javascript:alert(1)", 'http://x/"><script>', "file:///etc/passwd", "", None, "h" * 600):
        assert build_url(base, link) == "?tab=browse&model=bow&pairing=tt"
    assert build_url("https://me.hf.space/app?x=1#y", link) == "https://me.hf.space/app?tab=browse&model=bow&pairing=tt"


def test_alpha_snaps_to_the_slider_step():
    assert parse_query("?tab=grounding&model=toy:clip&alpha=1.26").alpha == 1.25
    assert parse_query("?tab=grounding&model=toy:clip&alpha=0").alpha == 0.0


# --- hostile links: refused, the parameter named ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "query, named",
    [
        ("?tab=admin&model=bow", "tab"),
        ("?model=bow", "tab"),
        ("?tab=browse&model=nope:model", "model"),
        ("?tab=browse&model=st:/etc", "model"),
        ("?tab=browse&model=hf:~/secret-model", "model"),
        ("?tab=browse&model=open_clip:local-dir:/tmp/x", "model"),
        ("?tab=browse&model=", "model"),
        ("?tab=browse&model=bow&data=../../etc/passwd", "data"),
        ("?tab=browse&model=bow&data=/etc/passwd", "data"),
        ("?tab=browse&model=bow&data=set:../../etc", "data"),
        ("?tab=browse&model=bow&data=upload:0123456789abcdef", "data"),
        ("?tab=browse&model=bow&pairing=xx", "pairing"),
        ("?tab=browse&model=bow&q=" + "a" * 201, "q"),
        ("?tab=browse&model=bow&q=a%00b", "q"),
        ("?tab=browse&model=bow&alpha=1", "alpha"),
        ("?tab=browse&model=bow&model=minilm", "model"),
        ("?tab=grounding&model=toy:clip&factor=colour", "factor"),
        ("?tab=grounding&model=toy:clip&alpha=nan", "alpha"),
        ("?tab=grounding&model=toy:clip&alpha=inf", "alpha"),
        ("?tab=grounding&model=toy:clip&alpha=-inf", "alpha"),
        ("?tab=grounding&model=toy:clip&alpha=1e308", "alpha"),
        ("?tab=grounding&model=toy:clip&alpha=8.5", "alpha"),
        ("?tab=grounding&model=toy:clip&alpha=-0.5", "alpha"),
        ("?tab=grounding&model=toy:clip&alpha=abc", "alpha"),
        ("?tab=grounding&model=toy:clip&value=" + "v" * 300, "value"),
        ("?tab=grounding&model=toy:clip&q=x", "q"),
    ],
)
def test_a_hostile_parameter_is_refused_and_named(query, named):
    with pytest.raises(ValueError) as e:
        parse_query(query)
    assert str(e.value).startswith(named), str(e.value)


def test_an_overlong_link_is_refused_before_it_is_read():
    with pytest.raises(ValueError, match="longer than"):
        parse_query("?tab=browse&model=bow&zz=" + "x" * 3000)


def test_html_in_a_value_is_text_in_the_refusal():
    with pytest.raises(ValueError) as e:
        parse_query("?tab=browse&model=" + quote("<img src=x onerror=alert(1)>"))
    message = share.refused(e.value)
    assert "<img" not in message
    # a question id with markup is text: it travels escaped, and the page quotes it escaped (browse.load_view)
    link = parse_query("?tab=browse&model=bow&q=" + quote("<b>x</b>"))
    assert link.question == "<b>x</b>"
    assert "%3Cb%3E" in build_query(link)


def test_public_mode_refuses_what_the_tabs_refuse(monkeypatch):
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    with pytest.raises(ValueError, match="^model: that model is not offered"):
        parse_query("?tab=browse&model=st:/srv/model")
    with pytest.raises(ValueError, match="^model: lora:"):  # a job of someone else's (or none)
        parse_query("?tab=browse&model=lora:someone-elses-job")
    assert parse_query("?tab=browse&model=minilm").model == "minilm"


def test_a_page_without_a_link_or_with_a_bad_one():
    class Request:
        def __init__(self, params):
            from starlette.datastructures import QueryParams

            self.query_params = QueryParams(params)

    assert share.page_link(object()) == (None, "")
    assert share.page_link(Request("__theme=dark")) == (None, "")
    link, note = share.page_link(Request("tab=grounding&model=toy:clip&alpha=1.25"))
    assert link == Link("grounding", "toy:clip", alpha=1.25) and note == ""
    link, note = share.page_link(Request("tab=grounding&model=toy:clip&alpha=nan"))
    assert link is None and note.startswith("**This link could not be opened** (alpha")


def test_the_data_a_link_may_carry(tmp_path, monkeypatch):
    assert share.link_data("browse", "") == ""
    with pytest.raises(ValueError, match="embedded default or a listed set"):
        share.link_data("browse", str(tmp_path / "mine.jsonl"))


# --- in a browser -------------------------------------------------------------------------------------------------------
def _share_link(page, prefix: str) -> str:
    page.click(f"#{prefix}-share-btn")
    page.wait_for_function(
        f"() => document.querySelector('#{prefix}-share-link textarea, #{prefix}-share-link input')"
        "?.value.includes('tab=')",
        timeout=60_000,
    )
    return page.input_value(f"#{prefix}-share-link textarea, #{prefix}-share-link input")


@pytest.mark.ui
def test_browse_link_reopens_the_same_question(app_url, page, browser):
    from tests.ui.conftest import no_error_toast, pick_option

    page.goto(app_url)
    page.wait_for_selector("#bl-question-html .bl-card", timeout=180_000)
    pick_option(page, "bl-question", "n02-ind-003")
    page.wait_for_function(
        "() => document.querySelector('#bl-question-html').innerText.includes('n02-ind-003')", timeout=60_000
    )
    url = _share_link(page, "bl")
    assert url.startswith(app_url.rstrip("/")) and "tab=browse" in url and "q=n02-ind-003" in url, url
    # the card beside it: the question shown, as PNG and SVG downloads
    page.click("#bl-card-btn")
    page.locator("#bl-card-files a[download='n02-ind-003_card.svg']").wait_for(timeout=60_000)
    assert page.locator("#bl-card-files a[download='n02-ind-003_card.png']").count() == 1

    fresh = browser.new_context(viewport={"width": 1400, "height": 1100}).new_page()
    try:
        fresh.goto(url)
        fresh.wait_for_function(
            "() => document.querySelector('#bl-question-html')?.innerText.includes('n02-ind-003')", timeout=180_000
        )
        assert fresh.input_value("#bl-question input") == "n02-ind-003"
        assert fresh.input_value("#bl-model input") == "minilm"
        no_error_toast(fresh)

        # a crafted link: the default view, one sentence on why, no toast
        fresh.goto(app_url.rstrip("/") + "/?tab=browse&model=st:/etc&q=%3Cb%3Ex%3C/b%3E")
        fresh.wait_for_selector("#bl-question-html .bl-card", timeout=180_000)
        fresh.wait_for_function(
            "() => document.querySelector('#bl-link-note')?.innerText.includes('could not be')", timeout=60_000
        )
        assert "n02-ind-000" in fresh.inner_text("#bl-question-html")
        no_error_toast(fresh)
    finally:
        fresh.context.close()


@pytest.mark.ui
def test_grounding_link_reopens_the_same_alpha(app_url, page, browser):
    from tests.ui.conftest import no_error_toast

    page.goto(app_url)
    page.wait_for_selector("#bl-question-html .bl-card", timeout=180_000)
    page.click("button[role='tab']:has-text('Grounding')")
    page.click("#gd-load")
    page.wait_for_selector("#gd-summary #gd-alpha-shown", timeout=300_000)
    slider = page.locator("#gd-alpha input[type='number']")
    slider.fill("1.25")
    slider.press("Enter")
    page.wait_for_function("() => document.querySelector('#gd-alpha input[type=number]').value === '1.25'")
    url = _share_link(page, "gd")
    assert "tab=grounding" in url and "model=toy:clip" in url and "alpha=1.25" in url, url
    value = re.search(r"value=([^&]+)", url).group(1)

    fresh = browser.new_context(viewport={"width": 1400, "height": 1100}).new_page()
    try:
        fresh.goto(url)
        fresh.wait_for_selector("#gd-summary #gd-alpha-shown", timeout=300_000)
        assert fresh.inner_text("#gd-alpha-shown") == "1.25"
        assert fresh.input_value("#gd-alpha input[type='number']") == "1.25"
        assert fresh.locator("button[role='tab'][aria-selected='true']").inner_text().strip() == "Grounding"
        assert fresh.input_value("#gd-value input") == value.replace("+", " ")
        no_error_toast(fresh)
    finally:
        fresh.context.close()
