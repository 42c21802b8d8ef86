"""jl.validate's verdict API: criteria, calibration overlap, the notebook table."""

import math

import numpy as np
import pytest
from scipy import stats

import jitterlab as jl
from jitterlab.compare.validate import (
    CalibrationOverlapError,
    Consistent,
    InInterval,
    Prediction,
    Reference,
    RelativeDifference,
    SameSignAndOrder,
    VerdictTable,
    WithinBound,
    verdict,
)


def judge(prediction, reference, criterion, **kwargs):
    return verdict(prediction, reference, criterion, claim="check", **kwargs)


def test_reachable_from_the_package():
    assert jl.validate.verdict is verdict
    assert jl.validate.Prediction is Prediction


@pytest.mark.parametrize(("value", "status"), [(105.0, "reproduced"), (115.0, "partly"),
                                                (130.0, "not reproduced"),
                                                (85.0, "partly")])
def test_relative_difference(value, status):
    v = judge(Prediction(value, unit="s"), Reference(100.0, unit="s"),
              RelativeDifference(0.10, partly=0.20))
    assert v.status == status
    assert v.details["relative difference"] == pytest.approx((value - 100) / 100)


def test_in_interval_uses_the_prediction_interval_and_the_reference_interval():
    prediction = Prediction(10.0, low=8.0, high=12.0, unit="ms")
    assert judge(prediction, Reference(11.9, unit="ms"), InInterval()).status == "reproduced"
    overlapping = Reference(13.0, low=11.5, high=14.5, unit="ms")
    assert judge(prediction, overlapping, InInterval()).status == "partly"
    assert judge(prediction, Reference(13.0, unit="ms"), InInterval()).status == "not reproduced"


def test_in_interval_rescales_a_normal_interval_to_its_level():
    # a standard error of 1: the 95 % interval is ±1.96, the 50 % interval ±0.674
    prediction = Prediction(0.0, standard_error=1.0)
    assert judge(prediction, Reference(1.5), InInterval(0.95)).status == "reproduced"
    assert judge(prediction, Reference(1.5), InInterval(0.50)).status == "not reproduced"
    assert judge(prediction, Reference(0.6), InInterval(0.50)).status == "reproduced"


NARROW = InInterval(0.95, max_half_width=0.25)


@pytest.mark.parametrize(("low", "high", "reference", "status"), [
    (75.0, 125.0, 80.0, "reproduced"),        # half-width exactly 25 %: still narrow enough
    (75.0, 125.0, 75.0, "reproduced"),        # the interval's edge belongs to it
    (74.5, 125.5, 80.0, "partly"),            # 25.5 %: too wide to pass, inside it
    (60.0, 110.0, 105.0, "reproduced"),       # asymmetric: half of (high - low) is 25 %
    (60.0, 112.0, 105.0, "partly"),           # ... 26 %
    (50.0, 150.0, 40.0, "not reproduced"),    # wide and outside: no better than InInterval
    (90.0, 110.0, 111.0, "not reproduced"),   # narrow and outside
])
def test_in_interval_with_a_maximum_half_width(low, high, reference, status):
    prediction = Prediction(100.0, low=low, high=high, unit="k ev/s")
    v = judge(prediction, Reference(reference, unit="k ev/s"), NARROW)
    assert v.status == status
    assert v.details["interval half-width / value"] == pytest.approx((high - low) / 200)
    # without the maximum, the same comparison only asks whether the reference is inside
    plain = judge(prediction, Reference(reference, unit="k ev/s"), InInterval(0.95)).status
    assert plain == ("reproduced" if low <= reference <= high else "not reproduced")
    assert "interval half-width / value" not in judge(
        prediction, Reference(reference, unit="k ev/s"), InInterval(0.95)).details


def test_maximum_half_width_keeps_partly_for_an_overlapping_reference():
    narrow = Prediction(100.0, low=90.0, high=110.0)
    assert judge(narrow, Reference(115.0, low=108.0, high=122.0), NARROW).status == "partly"
    assert judge(narrow, Reference(115.0, low=111.0, high=122.0), NARROW).status == \
        "not reproduced"


def test_maximum_half_width_is_relative_to_the_size_of_the_value_at_the_criterion_level():
    # a negative prediction: relative to |value|
    negative = Prediction(-100.0, low=-125.0, high=-75.0)
    assert judge(negative, Reference(-90.0), NARROW).status == "reproduced"
    # a standard error of 10 on 100: 95 % half-width 19.6 %, 99 % half-width 25.8 %
    prediction = Prediction(100.0, standard_error=10.0)
    at_95 = judge(prediction, Reference(110.0), NARROW)
    assert at_95.status == "reproduced"
    assert at_95.details["interval half-width / value"] == pytest.approx(stats.norm.ppf(0.975)
                                                                         / 10)
    assert judge(prediction, Reference(110.0),
                 InInterval(0.99, max_half_width=0.25)).status == "partly"


def test_maximum_half_width_criterion_reads_as_a_test():
    assert NARROW.describe() == (
        "reproduced if the reference lies in the prediction's 95 % interval and that interval "
        "spans at most ± 25 % of the predicted value (partly: in a wider interval, or only "
        "the reference's interval overlaps)")
    assert InInterval(0.9).describe() == \
        "reproduced if the reference lies in the prediction's 90 % interval"


def test_samples_give_quantiles_and_median():
    draws = np.arange(1001.0)
    p = Prediction(samples=draws, level=0.9)
    assert p.value == 500.0
    assert (p.low, p.high) == pytest.approx(tuple(np.quantile(draws, [0.05, 0.95])))
    assert p.standard_error == pytest.approx(np.std(draws, ddof=1))


def test_consistent_follows_the_normal_quantile():
    limit = stats.norm.ppf(0.975)
    se = 3.0 / math.sqrt(2)  # combined error of two errors 3/sqrt(2) each: 3
    for z, status in [(0.99 * limit, "reproduced"), (1.01 * limit, "partly"),
                      (2.01 * limit, "not reproduced")]:
        v = judge(Prediction(3.0 * z, standard_error=se), Reference(0.0, standard_error=se),
                  Consistent(0.95))
        assert v.status == status
        assert v.details["z"] == pytest.approx(z)


def test_consistent_is_right_at_its_nominal_rate():
    # both sides are unbiased draws with their true errors: about 5 % are rejected
    rng = np.random.default_rng(5)
    trials = 4000
    rejected = sum(judge(Prediction(rng.normal(0, 1), standard_error=1.0),
                         Reference(rng.normal(0, 2), standard_error=2.0),
                         Consistent(0.95)).status != "reproduced" for _ in range(trials))
    se = math.sqrt(0.05 * 0.95 / trials)
    assert abs(rejected / trials - 0.05) < 4 * se


def test_same_sign_and_order():
    assert judge(Prediction(3.0), Reference(20.0), SameSignAndOrder(10)).status == "reproduced"
    assert judge(Prediction(3.0), Reference(200.0), SameSignAndOrder(10)).status == "partly"
    assert judge(Prediction(-3.0), Reference(2.0), SameSignAndOrder()).status == "not reproduced"


def test_within_bound_reads_the_whole_interval():
    limit = Reference(15.0, bound="upper", unit="%")
    assert judge(Prediction(10.0, low=8, high=12, unit="%"), limit,
                 WithinBound()).status == "reproduced"
    assert judge(Prediction(14.0, low=12, high=16, unit="%"), limit,
                 WithinBound()).status == "partly"
    assert judge(Prediction(20.0, unit="%"), limit, WithinBound()).status == "not reproduced"
    floor = Reference(1.0, bound="lower")
    assert judge(Prediction(2.0), floor, WithinBound()).status == "reproduced"
    assert str(limit.text()).startswith("< 15")


def test_a_calibration_row_is_refused():
    prediction = Prediction(1.0, calibrated_on=["table1/16^3/64", "table1/16^3/128"])
    with pytest.raises(CalibrationOverlapError, match="table1/16\\^3/64"):
        judge(prediction, Reference(1.0, id="table1/16^3/64"), RelativeDifference())
    assert judge(prediction, Reference(1.0, id="table1/60^3/64"),
                 RelativeDifference()).status == "reproduced"
    # a reference made of several runs is refused if any of them fed the fit
    with pytest.raises(CalibrationOverlapError):
        judge(prediction, Reference(1.0, id=("run 9", "table1/16^3/128")), RelativeDifference())


def test_scope_and_label():
    v = judge(Prediction(1.0), Reference(1.0), RelativeDifference(), scope="analogue",
              needs="1 024 nodes")
    assert v.label == "analogue: reproduced"
    assert "1 024 nodes" in str(v)
    with pytest.raises(ValueError, match="needs"):
        judge(Prediction(1.0), Reference(1.0), RelativeDifference(), scope="analogue")
    assert judge(Prediction(1.0), Reference(1.0), RelativeDifference(),
                 scope="self-consistency").label == "self-consistency: reproduced"


@pytest.mark.parametrize(("make", "match"), [
    (lambda: Prediction(), "give a value"),
    (lambda: Prediction(1.0, low=2.0), "both low and high"),
    (lambda: Prediction(1.0, low=2.0, high=3.0), "outside"),
    (lambda: Prediction(1.0, standard_error=-1), "standard_error"),
    (lambda: Prediction(float("nan")), "finite"),
    (lambda: Prediction(1.0, level=1.0), "level"),
    (lambda: Prediction(samples=[1.0]), "samples"),
    (lambda: Prediction(1.0, calibrated_on=[3]), "calibrated_on"),
    (lambda: Reference(1.0, bound="below"), "bound"),
    (lambda: judge(Prediction(1.0, unit="s"), Reference(1.0, unit="ms"), RelativeDifference()),
     "'s' and the reference in 'ms'"),
    (lambda: judge(Prediction(1.0), Reference(1.0), "10 %"), "criterion"),
    (lambda: judge(Prediction(1.0), Reference(1.0), InInterval()), "uncertainty"),
    (lambda: judge(Prediction(1.0), Reference(1.0), Consistent()), "uncertainty"),
    (lambda: judge(Prediction(1.0), Reference(1.0), WithinBound()), "no bound"),
    (lambda: judge(Prediction(1.0), Reference(1.0, bound="upper"), RelativeDifference()),
     "WithinBound"),
    (lambda: judge(Prediction(1.0), Reference(0.0), RelativeDifference()), "reference is 0"),
    (lambda: judge(Prediction(1.0), Reference(1.0), RelativeDifference(), scope="paper"),
     "scope"),
    (lambda: verdict(Prediction(1.0), Reference(1.0), RelativeDifference(), claim=" "),
     "claim"),
    (lambda: RelativeDifference(0.2, partly=0.1), "partly"),
    (lambda: InInterval(max_half_width=0), "max_half_width must be > 0"),
    (lambda: InInterval(max_half_width=-0.25), "max_half_width must be > 0"),
    (lambda: InInterval(max_half_width=float("nan")), "max_half_width must be finite"),
    (lambda: InInterval(max_half_width="wide"), "max_half_width must be a number"),
    (lambda: judge(Prediction(0.0, low=-1.0, high=1.0), Reference(0.5), NARROW),
     "predicted value, which is 0"),
])
def test_bad_input_is_named(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_table_text_and_frame():
    table = VerdictTable("Seed 002")
    assert "no verdict yet" in str(table)
    first = table.add(judge(Prediction(1.05, unit="s"), Reference(1.0, unit="s", source="T1"),
                            RelativeDifference()))
    table.add(verdict(Prediction(3.0), Reference(1.0), RelativeDifference(), claim="other"))
    assert first.status == "reproduced" and len(table) == 2
    text = str(table).splitlines()
    assert text[0] == "**Seed 002**"
    assert text[2].startswith("| claim | prediction | reference |")
    assert ("| check | 1.05 s | 1 s | T1 | reproduced if the relative difference < 10 % "
            "| reproduced |") in text
    assert table.counts() == {"reproduced": 1, "not reproduced": 1}
    assert list(table.to_frame()["verdict"]) == ["reproduced", "not reproduced"]
    # the same claim again replaces the old row
    table.add(judge(Prediction(2.0, unit="s"), Reference(1.0, unit="s"), RelativeDifference()))
    assert len(table) == 2 and table.to_frame()["verdict"].iloc[-1] == "not reproduced"


def test_table_redraws_its_display():
    updates = []

    class Handle:
        def update(self, obj):
            updates.append(obj.data)

    table = VerdictTable()
    table._handle = Handle()
    table.add(judge(Prediction(1.0), Reference(1.0), RelativeDifference()))
    assert len(updates) == 1 and "| check |" in updates[0]


def test_docstring_example_runs():
    import doctest

    from jitterlab import verdict as module

    result = doctest.testmod(module)
    assert result.attempted >= 3 and result.failed == 0
