//! From distance to round-trip time: the physical floor set by light in fibre,
//! and the typical figure of real paths.

use crate::units::{Distance, Rtt};

/// Speed of light in vacuum, km/s (exact by definition of the metre).
pub const C_KM_PER_S: f64 = 299_792.458;

/// Group index of standard single-mode fibre (ITU-T G.652) at 1550 nm, ≈ 1.468.
pub const FIBRE_INDEX: f64 = 1.468;

/// Rule-of-thumb RTTs of real paths, as widely published for terrestrial and
/// submarine routes (route detours, equipment and queues included):
/// (one-way distance km, RTT ms).
pub const TYPICAL_RTT: [(f64, f64); 4] = [
    (0.0, 0.0),
    (1_000.0, 15.0),
    (4_000.0, 50.0),
    (8_000.0, 120.0),
];

/// Speed of light in fibre: c / 1.468 ≈ 204,000 km/s ("200 km per ms").
pub fn fibre_speed_km_per_s() -> f64 {
    C_KM_PER_S / FIBRE_INDEX
}

/// The physical floor: twice the distance at the speed of light in fibre.
pub fn fibre_rtt(d: Distance) -> Rtt {
    let secs = 2.0 * d.km() / fibre_speed_km_per_s();
    Rtt::from_secs(secs).unwrap_or_else(|| unreachable!("distance > 0 gives rtt > 0"))
}

/// The typical RTT of a real path of this length: the rule-of-thumb table,
/// linearly interpolated (and extended past 8,000 km with its last slope), never
/// below the fibre floor.
pub fn typical_rtt(d: Distance) -> Rtt {
    let km = d.km();
    let mut ms = None;
    for w in TYPICAL_RTT.windows(2) {
        let ((d0, r0), (d1, r1)) = (w[0], w[1]);
        if km <= d1 {
            ms = Some(r0 + (r1 - r0) * (km - d0) / (d1 - d0));
            break;
        }
    }
    let ms = ms.unwrap_or_else(|| {
        let [.., (d0, r0), (d1, r1)] = TYPICAL_RTT;
        r1 + (r1 - r0) / (d1 - d0) * (km - d1)
    });
    let floor = fibre_rtt(d);
    Rtt::from_ms(ms).filter(|t| *t > floor).unwrap_or(floor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousand_km() {
        let d = Distance::from_km(1000.0).unwrap_or_else(|| unreachable!());
        let floor = fibre_rtt(d);
        assert!((floor.ms() - 9.79).abs() < 0.01, "{}", floor.ms());
        assert_eq!(format!("{:.0}", floor.ms()), "10");
        assert!((typical_rtt(d).ms() - 15.0).abs() < 1e-9);
        assert!((fibre_speed_km_per_s() - 204_218.0).abs() < 1.0);
    }

    #[test]
    fn table_points_and_beyond() {
        for (km, ms) in [
            (4000.0, 50.0),
            (8000.0, 120.0),
            (2500.0, 32.5),
            (12_000.0, 190.0),
        ] {
            let d = Distance::from_km(km).unwrap_or_else(|| unreachable!());
            assert!((typical_rtt(d).ms() - ms).abs() < 1e-9, "{km}");
        }
        // Short paths: never below light.
        let d = Distance::from_km(1.0).unwrap_or_else(|| unreachable!());
        assert!(typical_rtt(d) >= fibre_rtt(d));
    }
}
