//! A rule's raw observation, before it is weighed: what each rule in
//! [`crate::rules`] reports and [`crate::weigh`] turns into a
//! [`Finding`](plumb_record::diagnosis::Finding).

use crate::tolerance::BINDING_SHARE;
use plumb_record::diagnosis::{EvidenceLine, Limit};

/// One cause a rule saw, with its prediction and counters, not yet weighed.
pub(crate) struct Seen {
    pub(crate) limit: Limit,
    pub(crate) what: String,
    pub(crate) sentence: String,
    pub(crate) predicted: Option<f64>,
    pub(crate) tolerance: Option<f64>,
    pub(crate) share: Option<f64>,
    pub(crate) share_needed: f64,
    /// The prediction is a bound only: it can rule the cause out (when it
    /// allows far more than was measured) but not explain the rate alone.
    pub(crate) bound_only: bool,
    pub(crate) missing: Vec<String>,
    pub(crate) evidence: Vec<EvidenceLine>,
    /// The most confidence the finding can have whatever its model says:
    /// an inferred link's rate is the measurement, so its closeness proves
    /// nothing and the inference's own confidence caps it.
    pub(crate) ceiling: Option<f64>,
}

impl Seen {
    pub(crate) fn new(limit: Limit, what: &str, sentence: String) -> Seen {
        Seen {
            limit,
            what: what.into(),
            sentence,
            predicted: None,
            tolerance: None,
            share: None,
            share_needed: BINDING_SHARE,
            bound_only: false,
            missing: Vec::new(),
            evidence: Vec::new(),
            ceiling: None,
        }
    }

    pub(crate) fn model(mut self, predicted: f64, tolerance: f64) -> Seen {
        self.predicted = Some(predicted);
        self.tolerance = Some(tolerance);
        self
    }

    pub(crate) fn counters(mut self, share: Option<f64>) -> Seen {
        self.share = share.map(|s| s.clamp(0.0, 1.0));
        self
    }
}
