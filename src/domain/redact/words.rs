//! The lists the allow-list reads: what a flag's name says about its value, and which
//! programs run another program or a script. `docs/redaction.md` prints them.

/// Words that make a flag, variable or query parameter secret, after splitting its name on
/// `-`, `_`, `.` and camelCase and lowercasing. Whole words: "tokenizer" and "`max_new_tokens`"
/// are not.
const SECRET_WORDS: [&str; 28] = [
    "token",
    "secret",
    "password",
    "passwd",
    "pass",
    "pw",
    "pwd",
    "passphrase",
    "key",
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
    "auth",
    "authorization",
    "bearer",
    "jwt",
    "cred",
    "creds",
    "credential",
    "credentials",
    "sessionid",
    "session",
    "signature",
    "sig",
    "cookie",
    "otp",
    "pin",
];

/// Joined names that hold a secret word without a separator (`--apiKey` is split by its
/// case, `--apikey` is not).
const SECRET_JOINED: [&str; 7] = [
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
    "sessionid",
    "clientsecret",
    "accountkey",
];

/// True when `name` (a flag, variable or parameter name) names a secret.
#[must_use]
pub fn is_secret_name(name: &str) -> bool {
    let bare = name.trim_start_matches('-');
    if bare.is_empty() {
        return false;
    }
    let words = split_name(bare);
    let joined: String = words.concat();
    words.iter().any(|w| {
        SECRET_WORDS.contains(&w.as_str())
            || w.ends_with("token")
            || w.ends_with("secret")
            || w.contains("passw")
            // keytool's -storepass and -keypass, openssl's -passin and -passout
            || (w.len() > 4 && (w.ends_with("pass") || w.starts_with("pass")) && w != "passes")
    }) || SECRET_JOINED.iter().any(|k| joined.contains(k))
}

/// A name's words, lowercased: split at `-`, `_`, `.`, spaces and where lower case turns
/// upper (`authKey`: auth, key).
fn split_name(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.' | ' ' | '\t') {
            words.push(std::mem::take(&mut word));
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower {
            words.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    words.push(word);
    words.retain(|w| !w.is_empty());
    words
}

/// Flags whose value is a whole secret though their name is not one: HTTP headers (an
/// `Authorization:` or `X-Api-Key:` line) and user:password pairs.
const SECRET_VALUE_FLAGS: [&str; 6] = ["-h", "--header", "-u", "--user", "--proxy-user", "-U"];

/// Short flags that carry a password for one program: `mysql -pX`, `sshpass -p X`,
/// `redis-cli -a X`, `openssl enc -k X`.
const SECRET_SHORT_FLAGS: [(&str, &str); 8] = [
    ("mysql", "-p"),
    ("mysqldump", "-p"),
    ("mysqladmin", "-p"),
    ("mariadb", "-p"),
    ("sshpass", "-p"),
    ("redis-cli", "-a"),
    ("openssl", "-k"),
    ("smbclient", "-U"),
];

/// True when the value of `flag` (for `program`, a base name) is a secret.
#[must_use]
pub fn is_secret_flag(program: &str, flag: &str) -> bool {
    is_secret_name(flag)
        || SECRET_VALUE_FLAGS.contains(&flag)
        || SECRET_VALUE_FLAGS.contains(&flag.to_ascii_lowercase().as_str())
        || SECRET_SHORT_FLAGS.contains(&(program, flag))
}

/// Flags whose values are kept (after the token shapes are removed, and only when the value
/// is one plain word): names of models, data, configs, devices, ports and the like. Written
/// lowercased, without leading dashes, `-` as `_`.
pub const SAFE_FLAGS: [&str; 95] = [
    "model",
    "model_name",
    "model_name_or_path",
    "model_path",
    "model_id",
    "model_type",
    "served_model_name",
    "arch",
    "architecture",
    "config",
    "config_name",
    "config_file",
    "config_path",
    "cfg",
    "dataset",
    "dataset_name",
    "dataset_config_name",
    "data",
    "data_dir",
    "data_path",
    "data_root",
    "train_file",
    "validation_file",
    "test_file",
    "output_dir",
    "out_dir",
    "output",
    "o",
    "log_dir",
    "logging_dir",
    "save_dir",
    "checkpoint",
    "checkpoint_dir",
    "ckpt",
    "ckpt_path",
    "resume",
    "resume_from_checkpoint",
    "cache_dir",
    "run_name",
    "name",
    "experiment",
    "exp_name",
    "project",
    "wandb_project",
    "task",
    "mode",
    "device",
    "devices",
    "gpus",
    "gpu",
    "dtype",
    "torch_dtype",
    "precision",
    "mixed_precision",
    "backend",
    "dist_backend",
    "optimizer",
    "optim",
    "scheduler",
    "lr_scheduler_type",
    "tokenizer",
    "tokenizer_name",
    "deepspeed",
    "fsdp",
    "strategy",
    "accelerator",
    "nproc_per_node",
    "nnodes",
    "node_rank",
    "rdzv_backend",
    "rdzv_id",
    "rdzv_endpoint",
    "master_addr",
    "master_port",
    "local_rank",
    "rank",
    "world_size",
    "seed",
    "split",
    "host",
    "port",
    "bind",
    "listen",
    "quantization",
    "kv_cache_dtype",
    "attn_implementation",
    "report_to",
    "save_strategy",
    "eval_strategy",
    "evaluation_strategy",
    "format",
    "log_level",
    "level",
    "url",
    "file",
];

/// True when `flag`'s value may be kept (see `SAFE_FLAGS`).
#[must_use]
pub fn is_safe_flag(flag: &str) -> bool {
    let n = flag
        .trim_start_matches('-')
        .to_ascii_lowercase()
        .replace('-', "_");
    SAFE_FLAGS.contains(&n.as_str())
}

/// Flags that take no value, so the argument after them is not theirs: the interpreters'
/// switches and common training switches. Written as `is_safe_flag` normalises them.
const SWITCHES: [&str; 38] = [
    "u",
    "b",
    "bb",
    "d",
    "i",
    "oo",
    "q",
    "s",
    "v",
    "vv",
    "x",
    "help",
    "version",
    "standalone",
    "no_python",
    "module",
    "fp16",
    "bf16",
    "tf32",
    "compile",
    "debug",
    "verbose",
    "quiet",
    "dry_run",
    "do_train",
    "do_eval",
    "do_predict",
    "trust_remote_code",
    "enforce_eager",
    "gradient_checkpointing",
    "overwrite_output_dir",
    "use_cpu",
    "push_to_hub",
    "no_cuda",
    "deterministic",
    "benchmark",
    "profile",
    "force",
];

/// True when `flag` takes no value. Python's one-letter switches are case-sensitive (`-O`
/// is a switch, `-o` of most tools takes a file), so only these are matched exactly.
#[must_use]
pub fn is_switch(flag: &str) -> bool {
    if matches!(flag, "-O" | "-OO" | "-B" | "-E" | "-I" | "-S" | "-V") {
        return true;
    }
    if flag.starts_with("--") || flag.len() == 2 {
        let n = flag.trim_start_matches('-').replace('-', "_");
        return SWITCHES.contains(&n.as_str());
    }
    false
}

/// Programs whose first argument that is not a flag is a script (kept): interpreters.
pub const INTERPRETERS: [&str; 11] = [
    "python", "python3", "python2", "pypy", "pypy3", "node", "ruby", "perl", "Rscript", "julia",
    "ipython",
];

/// Shells: their `-c` argument is a command line of its own, redacted as one.
pub const SHELLS: [&str; 6] = ["bash", "sh", "zsh", "dash", "ksh", "fish"];

/// Programs that run the program named after their own flags (kept, and read as a command
/// line again): `env`, `torchrun`, `srun`…
pub const LAUNCHERS: [&str; 17] = [
    "env",
    "nohup",
    "nice",
    "ionice",
    "numactl",
    "taskset",
    "stdbuf",
    "time",
    "timeout",
    "sudo",
    "exec",
    "srun",
    "mpirun",
    "mpiexec",
    "torchrun",
    "deepspeed",
    "xargs",
];

/// `python -m` modules that launch a script.
pub const LAUNCHER_MODULES: [&str; 4] = [
    "torch.distributed.run",
    "torch.distributed.launch",
    "deepspeed.launcher.runner",
    "accelerate.commands.launch",
];

/// Subcommands kept wherever they stand: `accelerate launch`, `vllm serve`, `git clone`.
pub const SUBCOMMANDS: [&str; 46] = [
    "launch",
    "serve",
    "run",
    "train",
    "eval",
    "evaluate",
    "test",
    "predict",
    "fit",
    "validate",
    "start",
    "stop",
    "worker",
    "bench",
    "benchmark",
    "infer",
    "inference",
    "generate",
    "export",
    "finetune",
    "tune",
    "lab",
    "notebook",
    "kernel",
    "main",
    "clone",
    "pull",
    "push",
    "fetch",
    "login",
    "build",
    "install",
    "exec",
    "up",
    "down",
    "logs",
    "configure",
    "create",
    "delete",
    "apply",
    "submit",
    "agent",
    "server",
    "client",
    "download",
    "upload",
];

/// One-dash flags that are words (`-storepass`, `-jar`), not a letter and its value.
pub const WORD_FLAGS: [&str; 17] = [
    "storepass",
    "keypass",
    "srcstorepass",
    "deststorepass",
    "srckeypass",
    "destkeypass",
    "passin",
    "passout",
    "pass",
    "password",
    "passwd",
    "jar",
    "cp",
    "classpath",
    "name",
    "key",
    "token",
];

/// File extensions of names kept as they are (a file's name is not its content; a key file's
/// extension, `.pem`, is not among them).
pub const KEPT_EXTENSIONS: [&str; 36] = [
    "py",
    "ipynb",
    "sh",
    "yaml",
    "yml",
    "json",
    "jsonl",
    "toml",
    "cfg",
    "ini",
    "txt",
    "csv",
    "tsv",
    "parquet",
    "arrow",
    "pt",
    "pth",
    "ckpt",
    "safetensors",
    "bin",
    "onnx",
    "engine",
    "plan",
    "tar",
    "gz",
    "zip",
    "npy",
    "npz",
    "h5",
    "log",
    "md",
    "gguf",
    "mar",
    "so",
    "jar",
    "r",
];

/// Words kept as values: booleans and their kin.
pub const PLAIN_WORDS: [&str; 10] = [
    "true", "false", "yes", "no", "on", "off", "none", "null", "auto", "all",
];
