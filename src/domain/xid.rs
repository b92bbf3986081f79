//! What an Xid error means and what to do about it, from NVIDIA's Xid catalog for Ampere and
//! newer GPUs (<https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html>): its
//! mnemonic, description and the two resolution buckets NVIDIA gives each code, the immediate
//! action (to get the GPU back into service) and the investigatory one (to keep it from
//! happening again). `tests/fixtures/nvidia/xid-catalog.md` holds the catalog's rows as read;
//! the tests check this table against it.

/// One row of NVIDIA's catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Xid {
    pub code: u64,
    pub mnemonic: &'static str,
    pub description: &'static str,
    /// The catalog lists it for H100 (Hopper, as the H200).
    pub hopper: bool,
    /// NVIDIA's "Resolution Bucket (Immediate Action)".
    pub immediate: &'static str,
    /// NVIDIA's "Resolution Bucket (Investigatory Action)".
    pub investigate: &'static str,
}

const fn x(
    code: u64,
    mnemonic: &'static str,
    description: &'static str,
    hopper: bool,
    immediate: &'static str,
    investigate: &'static str,
) -> Xid {
    Xid {
        code,
        mnemonic,
        description,
        hopper,
        immediate,
        investigate,
    }
}

/// The codes a monitor of training GPUs meets, in code order.
pub const CATALOG: [Xid; 37] = [
    x(8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing", true, "RESTART_APP", "CONTACT_SUPPORT"),
    x(13, "ROBUST_CHANNEL_GR_EXCEPTION / ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY", "Graphics Engine Exception", true, "RESTART_APP", "WORKFLOW_XID_13"),
    x(31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault", true, "RESTART_APP", "WORKFLOW_XID_31"),
    x(32, "ROBUST_CHANNEL_PBDMA_ERROR", "Invalid or corrupted push buffer stream", true, "RESTART_APP", "CHECK_APP/CUDA"),
    x(38, "ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", "Driver firmware error", true, "IGNORE", "CONTACT_SUPPORT"),
    x(43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing", true, "IGNORE", "CONTACT_SUPPORT"),
    x(45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "Preemptive cleanup, due to previous errors – Most likely to see when running multiple cuda applications and hitting a DBE", true, "WORKFLOW_XID_45", "Solo: RESTART_FM Not Solo: IGNORE (follow other Xid)"),
    x(48, "ROBUST_CHANNEL_GPU_ECC_DBE", "Double Bit ECC Error", true, "WORKFLOW_XID_48", "WORKFLOW_XID_48"),
    x(61, "PMU_BREAKPOINT", "Unused", false, "CONTACT_SUPPORT", "N/A; Unused"),
    x(62, "PMU_HALT_ERROR", "Internal micro-controller halt (newer drivers)", true, "RESET_GPU", "CONTACT_SUPPORT"),
    x(63, "INFOROM_DRAM_RETIREMENT_EVENT", "GPU memory remapping event", true, "IGNORE", "IGNORE"),
    x(64, "INFOROM_DRAM_RETIREMENT_FAILURE", "GPU memory remapping failure", true, "RESET_GPU", "CONTACT_SUPPORT"),
    x(68, "ROBUST_CHANNEL_NVDEC0_ERROR", "NVDEC0 Exception", true, "RESTART_APP", "CONTACT_SUPPORT"),
    x(69, "ROBUST_CHANNEL_GR_CLASS_ERROR", "Graphics Engine class error", true, "RESTART_APP", "CHECK_APP/CUDA"),
    x(74, "NVLINK_ERROR", "NVLINK Error", true, "WORKFLOW_NVLINK_ERR", "CONTACT_SUPPORT"),
    x(79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus", true, "RESTART_BM", "CONTACT_SUPPORT"),
    x(92, "EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate", true, "IGNORE", "CONTACT_SUPPORT"),
    x(94, "ROBUST_CHANNEL_CONTAINED_ERROR", "Contained memory error", true, "RESTART_APP", "IGNORE (sympathetic)"),
    x(95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained memory error", true, "RESET_GPU", "IGNORE (sympathetic)"),
    x(109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "Context Switch Timeout Error", true, "RESET_GPU", "CONTACT_SUPPORT"),
    x(110, "SEC_FAULT_ERROR", "Security Fault Error", true, "RESET_GPU", "INVESTIGATE_SW"),
    x(119, "GSP_RPC_TIMEOUT", "GSP RPC Timeout", true, "RESET_GPU", "INVESTIGATE_SW"),
    x(120, "GSP_ERROR", "GSP Error", true, "RESET_GPU", "INVESTIGATE_SW"),
    x(121, "C2C_ERROR", "C2C Error", false, "IGNORE", "CONTACT_SUPPORT"),
    x(123, "SPI_PMU_RPC_WRITE_FAIL", "Unused", false, "CONTACT_SUPPORT", "N/A; Unused"),
    x(136, "ALI_TRAINING_FAIL", "Link Training Failed", true, "RESET_GPU", "INVESTIGATE_LINK_SI"),
    x(140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "ECC Unrecovered Error", true, "RESET_GPU", "CONTACT_SUPPORT"),
    x(143, "GPU_INIT_ERROR", "GPU Initialization Error", true, "RESET_GPU", "CONTACT_SUPPORT"),
    x(144, "NVLINK_SAW_ERROR", "NVLINK: SAW Error", false, "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"),
    x(145, "NVLINK_RLW_ERROR", "NVLINK: RLW Error", false, "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"),
    x(146, "NVLINK_TLW_ERROR", "NVLINK: TLW Error", false, "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"),
    x(147, "NVLINK_TREX_ERROR", "NVLINK: TREX Error", false, "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"),
    x(148, "NVLINK_NVLPW_CTRL_ERROR", "NVLINK: NVLPW_CTRL Error", false, "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"),
    x(149, "NVLINK_NETIR_ERROR", "NVLINK: NETIR Error", false, "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"),
    x(150, "NVLINK_MSE_ERROR", "NVLINK: MSE Error", false, "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"),
    x(154, "GPU_RECOVERY_ACTION_CHANGED", "GPU Recovery Action Changed", true, "XID_154", "N/A Informational only regarding another Xid"),
    x(155, "NVLINK_SW_DEFINED_ERROR", "NVLINK: SW Defined Error", false, "RESET_GPU", "INVESTIGATE_SW_USER"),
];

/// The catalog's row for `code`, if gpuwatch knows it.
#[must_use]
pub fn lookup(code: u64) -> Option<&'static Xid> {
    CATALOG
        .binary_search_by_key(&code, |x| x.code)
        .ok()
        .map(|i| &CATALOG[i])
}

/// "Xid 79 (GPU has fallen off the bus)", or the bare code for one not in the table.
#[must_use]
pub fn name(code: u64) -> String {
    match lookup(code) {
        Some(x) => format!("Xid {code} ({})", x.description),
        None => format!("Xid {code}"),
    }
}

/// What the GPU needs after `code`, from NVIDIA's immediate action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// A reset or a reboot before its next job.
    Reset,
    /// Nothing NVIDIA names (IGNORE).
    Nothing,
    /// The application restarts; or a code gpuwatch does not know.
    Other,
}

/// A reset or reboot the GPU needs is `Reset`; a code NVIDIA says to ignore is `Nothing`.
#[must_use]
pub fn need(code: u64) -> Need {
    match lookup(code).map(|x| x.immediate) {
        Some("RESET_GPU" | "RESTART_BM" | "WORKFLOW_XID_48" | "WORKFLOW_NVLINK_ERR") => Need::Reset,
        Some("IGNORE") => Need::Nothing,
        _ => Need::Other,
    }
}

/// What to do, in a sentence: NVIDIA's immediate action for the code, then its investigation.
#[must_use]
pub fn actions(code: u64, device: u32) -> Vec<String> {
    let Some(x) = lookup(code) else {
        return vec![format!(
            "Look Xid {code} up in NVIDIA's Xid catalog \
             (docs.nvidia.com/deploy/xid-errors) and read its line: `sudo dmesg | grep -i xid`"
        )];
    };
    let now = match x.immediate {
        "RESTART_APP" => "Restart the application; the GPU needs no reset (NVIDIA: RESTART_APP)".into(),
        "RESET_GPU" => format!(
            "Stop the jobs on GPU {device} and reset it: `sudo nvidia-smi -r -i {device}`, or drain and reboot the node if the reset fails (NVIDIA: RESET_GPU)"
        ),
        "RESTART_BM" => "Drain the node and reboot it; if it happens again, check the GPU's seating, riser and power cables, then contact support (NVIDIA: RESTART_BM)".into(),
        "WORKFLOW_XID_48" => format!(
            "Reset GPU {device} (`sudo nvidia-smi -r -i {device}`); with an Xid 63 or 64 beside it, drain the node and reset; run field diagnostics if it repeats (NVIDIA: WORKFLOW_XID_48)"
        ),
        "WORKFLOW_XID_45" => "Follow the other Xid logged with it; alone, the application was torn down (Ctrl-C, kill, a GPU reset) (NVIDIA: WORKFLOW_XID_45)".into(),
        "WORKFLOW_NVLINK_ERR" => format!(
            "Reset GPU {device} or reboot the node; the fault may be at the link's far end (another GPU, an NVSwitch): `nvidia-smi nvlink -e -i {device}` (NVIDIA: WORKFLOW_NVLINK_ERR)"
        ),
        "WORKFLOW_NVLINK5_ERR" => "Decode the Xid line's intrInfo and errorStatus with NVIDIA's \"XID 144-150 Decode\" table: it says whether to reset or ignore (NVIDIA: WORKFLOW_NVLINK5_ERR)".into(),
        "XID_154" => "Do what the driver's recovery action says: `sudo dmesg | grep -i 'recovery action'` (NVIDIA: XID_154)".into(),
        "IGNORE" => "No action needed for this one (NVIDIA: IGNORE); watch for others with it".into(),
        "CONTACT_SUPPORT" => "Contact your hardware vendor with the output of `sudo nvidia-bug-report.sh` (NVIDIA: CONTACT_SUPPORT)".into(),
        other => format!("NVIDIA: {other}"),
    };
    let then = match x.investigate {
        "CHECK_APP/CUDA" | "WORKFLOW_XID_13" | "WORKFLOW_XID_31" => Some(
            "Most often the application: an out-of-bounds access or bad launch; run it under `compute-sanitizer`, and suspect the GPU only if it repeats on this GPU alone".to_string(),
        ),
        // RESTART_BM's own line already ends in "contact support".
        "CONTACT_SUPPORT" if !matches!(x.immediate, "IGNORE" | "RESTART_BM" | "CONTACT_SUPPORT") => {
            Some("If it repeats, contact your hardware vendor with `nvidia-bug-report.sh`".into())
        }
        "INVESTIGATE_SW" => Some(
            "Update the driver and firmware; the line in `dmesg` names the process involved".into(),
        ),
        _ => None,
    };
    std::iter::once(now).chain(then).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The catalog's rows as read from NVIDIA's page.
    fn nvidia_rows() -> Vec<Vec<String>> {
        let text = include_str!("../../tests/fixtures/nvidia/xid-catalog.md");
        text.lines()
            .filter(|l| l.starts_with("| ") && l.as_bytes()[2].is_ascii_digit())
            .map(|l| {
                l.trim()
                    .trim_matches('|')
                    .split('|')
                    .map(|c| c.trim().to_string())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn every_code_reads_as_nvidias_catalog_has_it() {
        let rows = nvidia_rows();
        assert_eq!(rows.len(), CATALOG.len());
        for (row, x) in rows.iter().zip(&CATALOG) {
            let code: u64 = row[0].parse().unwrap();
            assert_eq!(code, x.code);
            assert_eq!(row[1], x.mnemonic, "Xid {code}");
            assert_eq!(row[2], x.description, "Xid {code}");
            assert_eq!(row[4] == "YES", x.hopper, "Xid {code} on H100");
            assert_eq!(row[7], x.immediate, "Xid {code}");
            assert_eq!(row[8], x.investigate, "Xid {code}");
        }
    }

    #[test]
    fn codes_are_in_order_so_lookup_finds_each() {
        for x in &CATALOG {
            assert_eq!(lookup(x.code), Some(x));
        }
        assert_eq!(lookup(7), None);
        assert_eq!(name(79), "Xid 79 (GPU has fallen off the bus)");
        assert_eq!(name(999), "Xid 999");
    }

    #[test]
    fn what_to_do_follows_nvidias_bucket() {
        assert_eq!(need(79), Need::Reset);
        assert!(actions(79, 3)[0].contains("reboot"));
        assert_eq!(need(95), Need::Reset);
        assert!(actions(95, 3)[0].contains("nvidia-smi -r -i 3"));
        assert_eq!(need(13), Need::Other);
        assert!(actions(13, 0)[1].contains("compute-sanitizer"));
        assert_eq!(need(63), Need::Nothing);
        assert_eq!(need(12345), Need::Other);
        assert!(actions(12345, 0)[0].contains("catalog"));
        for x in &CATALOG {
            assert!(
                !actions(x.code, 0)[0].starts_with("NVIDIA:"),
                "Xid {}",
                x.code
            );
        }
    }
}
