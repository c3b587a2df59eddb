//! One interval of a watch as its sink sees it: the rows read now, busiest
//! first, and for a table the rest as the last scan saw them, each with its
//! owner; the counts a header states.

use super::row::RowView;
use super::watched::Watched;
use crate::owners::Owners;
use crate::scan::Schedule;

/// Interval `index` of a watch, handed to a [`super::TopSink`].
pub struct Interval<'a> {
    /// The interval's number (1 for the first with rates).
    pub index: u64,
    /// Whether this interval scanned the whole socket table.
    pub full_scan: bool,
    /// The scan schedule (how often a full scan runs).
    pub schedule: &'a Schedule,
    pub(super) watched: &'a Watched,
    pub(super) owners: &'a mut Owners,
}

impl Interval<'_> {
    /// Connections known now.
    pub fn connections(&self) -> usize {
        self.watched.known.len()
    }

    /// Rows read now that moved data (at least `track::IDLE_BPS`).
    pub fn busy(&self) -> usize {
        self.watched
            .order
            .iter()
            .take_while(|(r, _)| *r >= crate::track::IDLE_BPS)
            .count()
    }

    /// Hands `each` the rows read now, busiest first (every connection's on
    /// a scan, the followed ones' between), until it fails.
    pub fn read_now<E>(&mut self, each: impl FnMut(RowView<'_>) -> Result<(), E>) -> Result<(), E> {
        let keys = self.watched.order.iter().map(|(_, k)| k);
        visit(self.watched, self.owners, keys, usize::MAX, each)
    }

    /// Hands `each` at most `n` rows: those read now, then the rest as the
    /// last scan saw them (idle, or they would be followed).
    pub fn shown<E>(
        &mut self,
        n: usize,
        each: impl FnMut(RowView<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let w = self.watched;
        let rest = w
            .scan_order
            .iter()
            .filter(|(_, k)| w.known.get(k).is_some_and(|e| e.read != self.index));
        let keys = w.order.iter().chain(rest).map(|(_, k)| k);
        visit(w, self.owners, keys, n, each)
    }
}

/// The rows of `keys` that have one, at most `n`, each with its owner.
fn visit<'k, E>(
    w: &Watched,
    owners: &mut Owners,
    keys: impl Iterator<Item = &'k u64>,
    n: usize,
    mut each: impl FnMut(RowView<'_>) -> Result<(), E>,
) -> Result<(), E> {
    for cookie in keys.take(n) {
        let Some((conn, row)) = w
            .known
            .get(cookie)
            .and_then(|e| Some((&e.conn, e.row.as_ref()?)))
        else {
            continue;
        };
        let owner = owners.get(conn.inode);
        each(RowView { conn, row, owner })?;
    }
    Ok(())
}
