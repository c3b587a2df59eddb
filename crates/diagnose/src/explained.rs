//! [`Explained`]: a test's `-J` document with the diagnosis of it, as
//! `plumb why -J` and `plumb lab --why -J` write it: the document's keys,
//! then `diagnosis`.

use plumb_record::Document;
use serde::{Deserialize, Serialize};

use plumb_record::diagnosis::Diagnosis;

/// A `-J` document and its diagnosis.
///
/// Serialized, the document's keys come first and `diagnosis` last (left
/// out when `None`); read, `diagnosis` is taken out of the document's keys
/// into [`Explained::diagnosis`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explained {
    /// The document explained.
    #[serde(flatten)]
    pub doc: Document,
    /// The diagnosis of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<Diagnosis>,
}

impl Explained {
    /// `doc` with `diagnosis`, in place of any diagnosis it carried.
    pub fn new(mut doc: Document, diagnosis: Diagnosis) -> Explained {
        doc.diagnosis = None;
        Explained {
            doc,
            diagnosis: Some(diagnosis),
        }
    }
}

/// The document with its diagnosis in it, as a reader of the JSON gets it.
impl From<Explained> for Document {
    fn from(x: Explained) -> Document {
        let mut doc = x.doc;
        if let Some(d) = x.diagnosis {
            doc.diagnosis = Some(Some(d));
        }
        doc
    }
}
