//! Values no GPU can report: refused in what gpuwatch reads back (a recording, a snapshot),
//! a gap in what it reads live.

use super::{DeviceSample, LATEST_PLAUSIBLE_MS};

impl DeviceSample {
    /// The first value no GPU can report, named with its value: a time after 2100, a
    /// percentage outside 0–100, a temperature outside −40–150 °C, power outside 0–10 kW, used
    /// memory over 1 PiB, a link rate outside 0–1e9 KiB/s, a clock over 20 GHz.
    /// Readers of recordings and snapshots refuse such a line rather than draw it.
    #[must_use]
    pub fn impossible(&self) -> Option<String> {
        self.first_impossible().map(|(_, why)| why)
    }

    /// A live reading no GPU can give (a driver's garbage) becomes a gap, as an unsupported
    /// metric is: drawn as nothing, and a recording of it still opens (its reader refuses a
    /// line with one). Nothing is formatted unless a value is cleared.
    pub fn clear_impossible(&mut self) {
        if self.all_possible() {
            return;
        }
        while let Some((field, _)) = self.first_impossible() {
            let g = &mut self.gpm;
            let value = match field {
                "util_gpu_pct" => &mut self.util_gpu_pct,
                "util_mem_pct" => &mut self.util_mem_pct,
                "fan_pct" => &mut self.fan_pct,
                "sm_active_pct" => &mut g.sm_active_pct,
                "sm_occupancy_pct" => &mut g.sm_occupancy_pct,
                "tensor_active_pct" => &mut g.tensor_active_pct,
                "dram_bw_pct" => &mut g.dram_bw_pct,
                "engine_active_pct" => &mut g.engine_active_pct,
                "fp16_active_pct" => &mut g.fp16_active_pct,
                "fp32_active_pct" => &mut g.fp32_active_pct,
                "fp64_active_pct" => &mut g.fp64_active_pct,
                "temp_c" => &mut self.temp_c,
                "power_w" => &mut self.power_w,
                "energy_power_w" => &mut self.energy_power_w,
                "power_limit_w" => &mut self.power_limit_w,
                "pcie_tx_kib_s" => &mut self.pcie_tx_kib_s,
                "pcie_rx_kib_s" => &mut self.pcie_rx_kib_s,
                "sm_clock_mhz" => {
                    self.sm_clock_mhz = None;
                    continue;
                }
                "mem_clock_mhz" => {
                    self.mem_clock_mhz = None;
                    continue;
                }
                "mem_used_bytes" => {
                    self.mem_used_bytes = None;
                    continue;
                }
                // The time is the tick's own, never a reading's.
                _ => return,
            };
            *value = None;
        }
    }

    /// No value is impossible (`first_impossible` finds none), checked without naming any:
    /// every sample read live is asked, and naming each of its 20 values to check it was
    /// 500 instructions a sample (2 % of judging 64 GPUs).
    fn all_possible(&self) -> bool {
        let within = |v: Option<f32>, lo: f32, hi: f32| v.is_none_or(|v| (lo..=hi).contains(&v));
        let percent = |v: Option<f32>| within(v, 0.0, 100.5);
        let watts = |v: Option<f32>| within(v, 0.0, 10_000.0);
        let g = &self.gpm;
        self.t_ms <= LATEST_PLAUSIBLE_MS
            && [self.util_gpu_pct, self.util_mem_pct, self.fan_pct]
                .into_iter()
                .all(percent)
            && [
                g.sm_active_pct,
                g.sm_occupancy_pct,
                g.tensor_active_pct,
                g.dram_bw_pct,
                g.engine_active_pct,
                g.fp16_active_pct,
                g.fp32_active_pct,
                g.fp64_active_pct,
            ]
            .into_iter()
            .all(percent)
            && within(self.temp_c, -40.0, 150.0)
            && [self.power_w, self.energy_power_w, self.power_limit_w]
                .into_iter()
                .all(watts)
            && within(self.pcie_tx_kib_s, 0.0, 1e9)
            && within(self.pcie_rx_kib_s, 0.0, 1e9)
            && [self.sm_clock_mhz, self.mem_clock_mhz]
                .into_iter()
                .all(|c| c.is_none_or(|c| c <= 20_000))
            && self.mem_used_bytes.is_none_or(|b| b <= 1 << 50)
    }

    /// The first impossible value's field and the words for it.
    fn first_impossible(&self) -> Option<(&'static str, String)> {
        if self.t_ms > LATEST_PLAUSIBLE_MS {
            return Some((
                "t_ms",
                format!("time {} ms is after the year 2100", self.t_ms),
            ));
        }
        let g = &self.gpm;
        let percents = [
            ("util_gpu_pct", self.util_gpu_pct),
            ("util_mem_pct", self.util_mem_pct),
            ("fan_pct", self.fan_pct),
            ("sm_active_pct", g.sm_active_pct),
            ("sm_occupancy_pct", g.sm_occupancy_pct),
            ("tensor_active_pct", g.tensor_active_pct),
            ("dram_bw_pct", g.dram_bw_pct),
            ("engine_active_pct", g.engine_active_pct),
            ("fp16_active_pct", g.fp16_active_pct),
            ("fp32_active_pct", g.fp32_active_pct),
            ("fp64_active_pct", g.fp64_active_pct),
        ];
        let ranges = percents
            .iter()
            .map(|&(n, v)| (n, v, 0.0, 100.5, "%"))
            .chain([
                ("temp_c", self.temp_c, -40.0, 150.0, " °C"),
                ("power_w", self.power_w, 0.0, 10_000.0, " W"),
                ("energy_power_w", self.energy_power_w, 0.0, 10_000.0, " W"),
                ("power_limit_w", self.power_limit_w, 0.0, 10_000.0, " W"),
                // PCIe 6.0 x16 moves 1.25e8 KiB/s a direction; a negative rate or 2^64 drew
                // a chart of nothing.
                ("pcie_tx_kib_s", self.pcie_tx_kib_s, 0.0, 1e9, " KiB/s"),
                ("pcie_rx_kib_s", self.pcie_rx_kib_s, 0.0, 1e9, " KiB/s"),
            ]);
        // Integers, said as read (as an f32, 4294967295 MHz read "4294967300 MHz").
        for (name, clock) in [
            ("sm_clock_mhz", self.sm_clock_mhz),
            ("mem_clock_mhz", self.mem_clock_mhz),
        ] {
            if let Some(mhz) = clock.filter(|c| *c > 20_000) {
                let why = format!("{name} {mhz} MHz is impossible (a GPU reports 0 to 20000)");
                return Some((name, why));
            }
        }
        // 1 PiB: a hundred times any GPU's memory, and under what a sum of 64 GPUs overflows.
        if let Some(used) = self.mem_used_bytes.filter(|b| *b > 1 << 50) {
            return Some((
                "mem_used_bytes",
                format!("mem_used_bytes {used} is impossible (a GPU reports 0 to 1 PiB)"),
            ));
        }
        for (name, v, lo, hi, unit) in ranges {
            if let Some(v) = v.filter(|v| !(lo..=hi).contains(v)) {
                return Some((
                    name,
                    format!("{name} {v}{unit} is impossible (a GPU reports {lo} to {hi})"),
                ));
            }
        }
        None
    }
}

impl super::ProcessSample {
    /// A process's reading neither NVML nor /proc gives: a share of the GPU outside 0–100 %, a
    /// negative CPU share (its own or a `DataLoader` worker's), said with its pid.
    #[must_use]
    pub fn impossible(&self) -> Option<String> {
        for (name, v) in [("sm_pct", self.sm_pct), ("mem_pct", self.mem_pct)] {
            if let Some(v) = v.filter(|v| !(0.0..=100.5).contains(v)) {
                return Some(format!(
                    "pid {}: {name} {v}% is impossible (NVML reports 0 to 100)",
                    self.pid
                ));
            }
        }
        let host = self.host.as_ref()?;
        let own = std::iter::once((self.pid, host.cpu_pct));
        let children = host.children.iter().map(|c| (c.pid, c.cpu_pct));
        own.chain(children)
            .find_map(|(pid, cpu)| cpu.filter(|c| c.is_nan() || *c < 0.0).map(|c| (pid, c)))
            .map(|(pid, c)| format!("pid {pid}: cpu_pct {c}% is impossible (a share is 0 or more)"))
    }

    /// What `impossible` names, read live, becomes a gap: a recording of it still opens.
    pub fn clear_impossible(&mut self) {
        for v in [&mut self.sm_pct, &mut self.mem_pct] {
            if v.is_some_and(|v| !(0.0..=100.5).contains(&v)) {
                *v = None;
            }
        }
        let Some(host) = self.host.as_mut() else {
            return;
        };
        let own = std::iter::once(&mut host.cpu_pct);
        for cpu in own.chain(host.children.iter_mut().map(|c| &mut c.cpu_pct)) {
            if cpu.is_some_and(|c| c.is_nan() || c < 0.0) {
                *cpu = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quick check agrees with the one that names the value, at each field's bounds,
    /// just past them, and at NaN.
    #[test]
    fn all_possible_is_first_impossible_finding_none() {
        let edges = [
            None,
            Some(-40.0001),
            Some(-40.0),
            Some(-0.0001),
            Some(0.0),
            Some(100.5),
            Some(100.51),
            Some(150.0),
            Some(150.01),
            Some(10_000.0),
            Some(10_000.01),
            Some(1e9),
            Some(1.1e9),
            Some(f32::NAN),
            Some(f32::INFINITY),
        ];
        let set: [fn(&mut DeviceSample, Option<f32>); 19] = [
            |s, v| s.util_gpu_pct = v,
            |s, v| s.util_mem_pct = v,
            |s, v| s.fan_pct = v,
            |s, v| s.gpm.sm_active_pct = v,
            |s, v| s.gpm.sm_occupancy_pct = v,
            |s, v| s.gpm.tensor_active_pct = v,
            |s, v| s.gpm.dram_bw_pct = v,
            |s, v| s.gpm.engine_active_pct = v,
            |s, v| s.gpm.fp16_active_pct = v,
            |s, v| s.gpm.fp32_active_pct = v,
            |s, v| s.gpm.fp64_active_pct = v,
            |s, v| s.temp_c = v,
            |s, v| s.power_w = v,
            |s, v| s.energy_power_w = v,
            |s, v| s.power_limit_w = v,
            |s, v| s.pcie_tx_kib_s = v,
            |s, v| s.pcie_rx_kib_s = v,
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // a test value
            |s, v| s.sm_clock_mhz = v.map(|v| (v.abs() * 3.0) as u32),
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // a test value
            |s, v| s.mem_used_bytes = v.map(|v| (f64::from(v.abs()) * 2e6) as u64),
        ];
        let mut checked = 0;
        for put in set {
            for v in edges {
                let mut s = DeviceSample::default();
                put(&mut s, v);
                assert_eq!(s.all_possible(), s.first_impossible().is_none(), "{s:?}");
                checked += usize::from(!s.all_possible());
            }
        }
        assert!(checked > 50, "only {checked} impossible samples tried");
        let mut late = DeviceSample {
            t_ms: LATEST_PLAUSIBLE_MS + 1,
            ..DeviceSample::default()
        };
        assert!(!late.all_possible());
        late.t_ms -= 1;
        assert!(late.all_possible());
    }

    /// A process's impossible share, read live, is a gap, and then nothing is impossible.
    #[test]
    fn a_process_reading_no_driver_gives_is_cleared() {
        let mut p = crate::model::ProcessSample {
            pid: 7,
            sm_pct: Some(500.0),
            mem_pct: Some(20.0),
            ..Default::default()
        };
        assert!(p
            .impossible()
            .is_some_and(|w| w.contains("pid 7: sm_pct 500%")));
        p.clear_impossible();
        assert_eq!((p.sm_pct, p.mem_pct), (None, Some(20.0)));
        assert_eq!(p.impossible(), None);
    }

    #[test]
    fn a_live_reading_no_gpu_can_give_becomes_a_gap_and_the_rest_is_kept() {
        let mut s = DeviceSample {
            t_ms: 1_000,
            util_gpu_pct: Some(f32::NAN),
            power_w: Some(4.29e6),
            temp_c: Some(61.0),
            pcie_rx_kib_s: Some(-1.0),
            sm_clock_mhz: Some(u32::MAX),
            mem_used_bytes: Some(u64::MAX),
            mem_clock_mhz: Some(3201),
            ..DeviceSample::default()
        };
        s.gpm.tensor_active_pct = Some(250.0);
        assert!(s.impossible().is_some());
        s.clear_impossible();
        assert_eq!(s.impossible(), None);
        assert_eq!(
            (
                s.util_gpu_pct,
                s.power_w,
                s.pcie_rx_kib_s,
                s.gpm.tensor_active_pct
            ),
            (None, None, None, None)
        );
        assert_eq!((s.sm_clock_mhz, s.mem_used_bytes), (None, None));
        assert_eq!(
            (s.temp_c, s.mem_clock_mhz, s.t_ms),
            (Some(61.0), Some(3201), 1_000)
        );
    }
}
