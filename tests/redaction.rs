//! The allow-list redaction, shape by shape: at least 250 command lines, each with what must
//! be kept (the program, the script, flag names, harmless values) and what must not survive.
//! `docs/redaction.md` says what is kept; a shape that leaks here leaks from every export.

use gpuwatch::redact::{redact, redact_args};

/// (arguments as /proc has them, what must be kept, what must not survive).
type Row = (Vec<String>, String, String);

/// The hand-written shapes: those of the issue that found 80 of 106 leaking, the earlier
/// deny-list's table, and what a training job's command line must keep.
#[allow(clippy::too_many_lines)] // a table, one case per line
fn hand() -> Vec<(Vec<&'static str>, &'static str, &'static str)> {
    vec![
        // flags with a separate value
        (
            vec!["python", "train.py", "--token", "abc123"],
            "--token ***",
            "abc123",
        ),
        (vec!["x", "--api-key", "k-123"], "--api-key ***", "k-123"),
        (
            vec!["x", "--password", "hunter2"],
            "--password ***",
            "hunter2",
        ),
        (vec!["x", "--pw", "hunter2"], "--pw ***", "hunter2"),
        (
            vec!["x", "--passphrase", "correct horse battery staple"],
            "--passphrase ***",
            "horse",
        ),
        (vec!["x", "--bearer", "tok999"], "--bearer ***", "tok999"),
        (vec!["x", "--jwt", "aaa.bbb.ccc"], "--jwt ***", "aaa.bbb"),
        (vec!["x", "--cred", "c1c1c1"], "--cred ***", "c1c1c1"),
        (
            vec!["x", "--session-id", "s3ss10n"],
            "--session-id ***",
            "s3ss10n",
        ),
        (
            vec!["x", "--signature", "sig0sig0"],
            "--signature ***",
            "sig0sig0",
        ),
        (
            vec!["x", "--AccessKey", "AK000"],
            "--AccessKey ***",
            "AK000",
        ),
        (
            vec!["x", "--secret", "-starts-with-dash"],
            "--secret ***",
            "starts-with-dash",
        ),
        (
            vec!["x", "--client-secret", "cs-1"],
            "--client-secret ***",
            "cs-1",
        ),
        (
            vec!["x", "--private-key", "pk-1"],
            "--private-key ***",
            "pk-1",
        ),
        (vec!["x", "--hf-token", "hfv"], "--hf-token ***", "hfv"),
        (vec!["x", "--wandb-key", "wk1"], "--wandb-key ***", "wk1"),
        (
            vec!["x", "--db-password", "dbp"],
            "--db-password ***",
            "dbp",
        ),
        (vec!["x", "--auth", "a:b"], "--auth ***", "a:b"),
        (vec!["x", "--cookie", "c=1"], "--cookie ***", "c=1"),
        (vec!["x", "--otp", "123456"], "--otp ***", "123456"),
        (vec!["x", "-p", "notsecret"], "-p ***", "notsecret"),
        // flags with = or : or whitespace inside one argument
        (vec!["x", "--token=abc"], "--token=***", "abc"),
        (vec!["x", "--api_key=xyz"], "--api_key=***", "xyz"),
        (vec!["x", "--password:x1y2"], "--password:***", "x1y2"),
        (vec!["x", "--token\tabc9"], "--token\t***", "abc9"),
        (vec!["x", "--token abc8"], "--token ***", "abc8"),
        (vec!["x", "--secret-key=sk1"], "--secret-key=***", "sk1"),
        (
            vec!["x", "--access-key-id=AK1"],
            "--access-key-id=***",
            "AK1",
        ),
        (vec!["x", "--pw=p1"], "--pw=***", "p1"),
        (vec!["x", "--Password=P1"], "--Password=***", "P1"),
        // environment-style assignments
        (vec!["env", "HF_TOKEN=hf1", "python"], "HF_TOKEN=***", "hf1"),
        (vec!["env", "OPENAI_API_KEY=k2"], "OPENAI_API_KEY=***", "k2"),
        (
            vec!["env", "AWS_SECRET_ACCESS_KEY=s3"],
            "AWS_SECRET_ACCESS_KEY=***",
            "s3",
        ),
        (vec!["env", "WANDB_API_KEY=w4"], "WANDB_API_KEY=***", "w4"),
        (vec!["env", "DB_PASSWORD=d5"], "DB_PASSWORD=***", "d5"),
        (vec!["env", "GITHUB_TOKEN=g6"], "GITHUB_TOKEN=***", "g6"),
        (vec!["env", "MY_SECRET=m7"], "MY_SECRET=***", "m7"),
        (vec!["x", "--env=HF_TOKEN=e8"], "--env=HF_TOKEN=***", "e8"),
        (vec!["x", "--env", "HF_TOKEN=e9"], "HF_TOKEN=***", "e9"),
        (vec!["x", "--set", "api.key=v10"], "api.key=***", "v10"),
        (
            vec!["x", "--set=auth.token=v11"],
            "--set=auth.token=***",
            "v11",
        ),
        (vec!["x", "-e", "PASSWORD=v12"], "PASSWORD=***", "v12"),
        // headers and user:password pairs
        (
            vec!["curl", "-H", "Authorization: Bearer abc.def"],
            "-H ***",
            "abc.def",
        ),
        (
            vec!["curl", "--header", "X-Api-Key: k13"],
            "--header ***",
            "k13",
        ),
        (
            vec!["curl", "--header=X-Api-Key: k14"],
            "--header=***",
            "k14",
        ),
        (vec!["curl", "-u", "bob:pw15"], "-u ***", "pw15"),
        (vec!["curl", "--user=bob:pw16"], "--user=***", "pw16"),
        (vec!["curl", "--user", "bob:pw17"], "--user ***", "pw17"),
        (
            vec!["curl", "--proxy-user", "p:pw18"],
            "--proxy-user ***",
            "pw18",
        ),
        // URLs
        (
            vec!["x", "https://bob:pw19@host/p"],
            "https://***@host/***", "pw19",
        ),
        (
            vec!["x", "https://bob:p/w20@host/p"],
            "https://***@host/***", "w20",
        ),
        (
            vec!["x", "https://bob:p@w21@host/p"],
            "https://***@host/***", "w21",
        ),
        (
            vec!["x", "postgres://u:pw22@db:5432/x"],
            "postgres://***@db:5432/***",
            "pw22",
        ),
        (
            vec!["x", "redis://:pw23@r:6379"],
            "redis://***@r:6379",
            "pw23",
        ),
        (
            vec!["x", "https://h/p?token=t24"],
            "https://h/***",
            "t24",
        ),
        (
            vec!["x", "https://h/p?a=1&token=t25"],
            "https://h/***",
            "t25",
        ),
        (
            vec!["x", "https://h/p?a=1&sig=t26&b=2"],
            "https://h/***",
            "t26",
        ),
        (
            vec!["x", "https://h/p?X-Amz-Signature=t27"],
            "https://h/***",
            "t27",
        ),
        (vec!["x", "https://h/p?api_key=t28"], "https://h/***", "t28"),
        (
            vec!["x", "https://h/p?access_token=t29"],
            "https://h/***", "t29",
        ),
        (vec!["x", "https://h/p?password=t30"], "https://h/***", "t30"),
        (
            vec!["x", "--url=https://u:pw31@h"],
            "--url=https://***@h",
            "pw31",
        ),
        (
            vec!["x", "--url", "https://u:pw32@h"],
            "https://***@h",
            "pw32",
        ),
        (
            vec!["x", "s3://bucket/key?X-Amz-Credential=c33"],
            "s3://bucket/***",
            "c33",
        ),
        // bare well-known tokens
        (
            vec!["x", "sk-abcdefghijklmnopqrstu34"],
            "x ***",
            "abcdefghijklmnop",
        ),
        (
            vec!["x", "sk-proj-abcdefghijklmnopqr35"],
            "x ***",
            "abcdefghijklmnop",
        ),
        (
            vec!["x", "ghp_abcdefghijklmnopqrstuv36"],
            "x ***",
            "abcdefghijklmnop",
        ),
        (
            vec!["x", "gho_abcdefghijklmnopqrstuv37"],
            "x ***",
            "abcdefghijklmnop",
        ),
        (
            vec!["x", "github_pat_abcdefghijklmnopq38"],
            "x ***",
            "abcdefghijklmnop",
        ),
        (
            vec!["x", "hf_abcdefghijklmnopqrstuv39"],
            "x ***",
            "abcdefghijklmnop",
        ),
        (
            vec!["x", "glpat-abcdefghijklmnopqrst40"],
            "x ***",
            "abcdefghijklmnop",
        ),
        (
            vec!["x", "xoxb-1234567890-abcdefghij41"],
            "x ***",
            "abcdefghij41",
        ),
        (
            vec!["x", "AKIAABCDEFGHIJKLMNOP"],
            "x ***",
            "ABCDEFGHIJKLMNOP",
        ),
        (
            vec!["x", "ASIAABCDEFGHIJKLMNOP"],
            "x ***",
            "ABCDEFGHIJKLMNOP",
        ),
        (
            vec!["x", "eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl"],
            "x ***",
            "c2lnbmF0dXJl",
        ),
        (
            vec!["x", "--model=hf_abcdefghijklmnopqrstuv45"],
            "--model=***",
            "abcdefghijklmnop",
        ),
        (
            vec!["x", "prefix:sk-abcdefghijklmnopqrstu46"],
            "x ***",
            "abcdefghijklmnop",
        ),
        (
            vec!["x", "Bearer", "eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl"],
            "x *** ***",
            "c2lnbmF0dXJl",
        ),
        // kept as they are
        (
            vec!["python", "train.py", "--tokenizer", "gpt2"],
            "--tokenizer gpt2",
            "\u{0}",
        ),
        (
            vec!["x", "--max-new-tokens", "128"],
            "--max-new-tokens 128",
            "\u{0}",
        ),
        (vec!["x", "--num-tokens=512"], "--num-tokens=512", "\u{0}"),
        (vec!["x", "--keyboard", "us"], "--keyboard ***", "us"),
        (vec!["x", "--passes", "3"], "--passes 3", "\u{0}"),
        (vec!["x", "--batch-size", "64"], "--batch-size 64", "\u{0}"),
        (vec!["x", "--sigma", "0.5"], "--sigma 0.5", "\u{0}"),
        (vec!["x", "--lr=3e-4"], "--lr=3e-4", "\u{0}"),
        (
            vec!["x", "https://huggingface.co/meta-llama/Llama-3"],
            "https://huggingface.co/***", "meta-llama",
        ),
        (
            vec!["x", "--data=/mnt/data/train"],
            "--data=/mnt/data/train",
            "\u{0}",
        ),
        (vec!["x", "sk-short"], "x ***", "sk-short"),
        (vec!["x", "hf_hub"], "x ***", "hf_hub"),
        (vec!["x", "AKIA"], "x ***", "AKIA"),
        (
            vec!["torchrun", "--nproc-per-node", "8", "train.py"],
            "--nproc-per-node 8 train.py",
            "\u{0}",
        ),
        (
            vec!["x", "--master-port=29500"],
            "--master-port=29500",
            "\u{0}",
        ),
        (vec!["x", "--keep-last", "5"], "--keep-last 5", "\u{0}"),
        (vec!["x", "--monkey", "1"], "--monkey 1", "\u{0}"),
        (vec!["x", "-o", "out.json"], "-o out.json", "\u{0}"),
        (
            vec!["x", "--output-dir=/tmp/x"],
            "--output-dir=/tmp/x",
            "\u{0}",
        ),
        (vec!["x", "a=b"], "a=***", "a=b"),
        (vec!["x", "--compile"], "--compile", "\u{0}"),
        (
            vec!["x", "https://h/p?page=2&sort=asc"],
            "https://h/***", "page",
        ),
        // The shapes a deny-list missed (issue 26).
        (
            vec!["x", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n-----END OPENSSH PRIVATE KEY-----", "next"],
            "x ***",
            "b3BlbnNzaC1rZXktdjE",
        ),
        (vec!["x", "-----BEGIN RSA PRIVATE KEY-----"], "x ***", "RSA PRIVATE"),
        (
            vec!["bash", "-c", "python train.py --token Xs3cr3tX"],
            "bash -c python train.py --token ***",
            "Xs3cr3tX",
        ),
        (
            vec!["sh", "-c", "cd /work && HF_TOKEN=shv4l python t.py"],
            "sh -c cd /work && HF_TOKEN=*** python t.py",
            "shv4l",
        ),
        (vec!["mysql", "-pS3cretPw", "-u", "root"], "mysql -p***", "S3cretPw"),
        (vec!["mysql", "-p", "S3cretPw2"], "mysql -p ***", "S3cretPw2"),
        (vec!["mysql", "-p424242"], "mysql -p***", "424242"),
        (vec!["mysqldump", "--password=Dump1"], "--password=***", "Dump1"),
        (vec!["sshpass", "-p", "Ssh1pw", "ssh", "host"], "sshpass -p ***", "Ssh1pw"),
        (vec!["sshpass", "-p", "909090", "ssh", "host"], "sshpass -p ***", "909090"),
        (vec!["redis-cli", "-a", "R3dis", "ping"], "redis-cli -a ***", "R3dis"),
        (vec!["openssl", "enc", "-passin", "pass:Op3nIn"], "-passin ***", "Op3nIn"),
        (vec!["openssl", "enc", "-passout", "pass:Op3nOut"], "-passout ***", "Op3nOut"),
        (vec!["openssl", "enc", "-k", "Op3nK"], "-k ***", "Op3nK"),
        (vec!["openssl", "enc", "-pass", "pass:Op3nP"], "-pass ***", "Op3nP"),
        (vec!["keytool", "-storepass", "St0re", "-keypass", "K3yp"], "-storepass *** -keypass ***", "St0re"),
        (vec!["keytool", "-keypass", "K3yp2"], "-keypass ***", "K3yp2"),
        (vec!["x", "--authKey", "AuthV1"], "--authKey ***", "AuthV1"),
        (vec!["x", "--accountKey", "AccV1"], "--accountKey ***", "AccV1"),
        (vec!["x", "--accountKey=AccV2"], "--accountKey=***", "AccV2"),
        (vec!["x", "--clientSecret", "CsV1"], "--clientSecret ***", "CsV1"),
        (vec!["x", "--apiToken=AtV1"], "--apiToken=***", "AtV1"),
        (
            vec!["x", "--conn", "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=Zm9vYmFyYmF6=="],
            "--conn DefaultEndpointsProtocol=***",
            "Zm9vYmFyYmF6",
        ),
        (vec!["x", "AccountKey=Zm9vYmFyYmF7=="], "AccountKey=***", "Zm9vYmFyYmF7"),
        (vec!["x", "--config", r#"{"api_key": "J50nKey"}"#], "--config ***", "J50nKey"),
        (vec!["x", r#"{"password":"J50nPw"}"#], "x ***", "J50nPw"),
        (vec!["x", "--extra", r"{'token': 'J50nTk'}"], "--extra ***", "J50nTk"),
        (
            vec!["x", "--url", "https://app.example/cb#access_token=Fr4gA&state=1"],
            "--url https://app.example/***",
            "Fr4gA",
        ),
        (vec!["x", "https://app.example/cb#access_token=Fr4gB"], "https://app.example/***", "Fr4gB"),
        (
            vec!["curl", "-X", "POST", "https://hooks.slack.com/services/T000/B000/Wh00kS3cret"],
            "https://hooks.slack.com/***",
            "Wh00kS3cret",
        ),
        (vec!["psql", "postgresql://u:Pg5ecret@db/app"], "postgresql://***@db/***", "Pg5ecret"),
        (vec!["git", "clone", "https://oauth2:Gl7tok@gitlab.com/x.git"], "git clone https://***@gitlab.com/***", "Gl7tok"),
        (
            vec!["aws", "configure", "set", "aws_secret_access_key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"],
            "aws configure ***",
            "wJalrXUtnFEMI",
        ),
        (
            vec!["java", "-Djavax.net.ssl.keyStorePassword=Ks1pw", "-jar", "app.jar"],
            "java -D*** -jar app.jar",
            "Ks1pw",
        ),
        (vec!["x", "--api-key", "1234567890"], "--api-key ***", "1234567890"),
        (vec!["x", "--pin", "4321"], "--pin ***", "4321"),
        (vec!["huggingface-cli", "login", "--token", "hfLogin1"], "--token ***", "hfLogin1"),
        (vec!["wandb", "login", "0123456789abcdef0123456789abcdef01234567"], "wandb login ***", "0123456789abcdef"),
        (vec!["python", "-c", "import os; os.environ['K']='Pyc0de'"], "python -c ***", "Pyc0de"),
        (vec!["node", "-e", "fetch('x',{headers:{a:'N0deTk'}})"], "node -e ***", "N0deTk"),
        (vec!["docker", "login", "-u", "bob", "-p", "D0ckPw"], "docker login -u *** -p ***", "D0ckPw"),
        (vec!["docker", "run", "-e", "API_TOKEN=Dk3nv", "img"], "-e API_TOKEN=***", "Dk3nv"),
        (vec!["x", "--secret-file=/run/secrets/a"], "--secret-file=***", "/run/secrets/a"),
        (vec!["x", "--db", "mongodb+srv://u:M0ngo@c.example/db"], "--db mongodb+srv://***@c.example/***", "M0ngo"),
        (vec!["x", "--hf_hub_token", "hub1"], "--hf_hub_token ***", "hub1"),
        (vec!["x", "--opt", "api_key=Opt1"], "--opt api_key=***", "Opt1"),
        (vec!["x", "--auth-header", "Basic YWxhZGRpbjpvcGVu"], "--auth-header ***", "YWxhZGRpbjpvcGVu"),
        (vec!["x", "plain-unknown-word"], "x ***", "plain-unknown-word"),
        (vec!["x", "--weird-flag", "hunter2"], "--weird-flag ***", "hunter2"),
        (vec!["x", "--x", "s3cr3t"], "--x ***", "s3cr3t"),
        // What a training job's command line keeps.
        (
            vec!["torchrun", "--nproc_per_node", "8", "--nnodes", "2", "--rdzv_endpoint", "node1:29400", "train.py", "--lr", "3e-4", "--batch-size", "64", "--model", "meta-llama/Llama-3-8B", "--bf16"],
            "torchrun --nproc_per_node 8 --nnodes 2 --rdzv_endpoint node1:29400 train.py --lr 3e-4 --batch-size 64 --model meta-llama/Llama-3-8B --bf16",
            "\u{0}",
        ),
        (
            vec!["accelerate", "launch", "--num_processes", "8", "train.py", "--config", "configs/a.yaml"],
            "accelerate launch --num_processes 8 train.py --config configs/a.yaml",
            "\u{0}",
        ),
        (
            vec!["vllm", "serve", "--host", "0.0.0.0", "--port", "8000", "--tensor-parallel-size", "4"],
            "vllm serve --host 0.0.0.0 --port 8000 --tensor-parallel-size 4",
            "\u{0}",
        ),
        (
            vec!["env", "CUDA_VISIBLE_DEVICES=0,1", "OMP_NUM_THREADS=8", "python", "train.py", "--epochs", "3"],
            "env CUDA_VISIBLE_DEVICES=0,1 OMP_NUM_THREADS=8 python train.py --epochs 3",
            "\u{0}",
        ),
        (
            vec!["bash", "-c", "cd /work && python train.py --epochs 3"],
            "bash -c cd /work && python train.py --epochs 3",
            "\u{0}",
        ),
        (
            vec!["python", "-u", "train.py", "--fp16", "--output_dir", "./out", "--seed", "42"],
            "python -u train.py --fp16 --output_dir ./out --seed 42",
            "\u{0}",
        ),
        (
            vec!["deepspeed", "--num_gpus", "8", "train.py", "--deepspeed", "ds_config.json"],
            "deepspeed --num_gpus 8 train.py --deepspeed ds_config.json",
            "\u{0}",
        ),
        (
            vec!["/usr/bin/python3", "/home/alice/run/pretrain.py", "--data", "/mnt/data", "--precision", "bf16-mixed", "--resume", "true"],
            "/usr/bin/python3 /home/alice/run/pretrain.py --data /mnt/data --precision bf16-mixed --resume true",
            "\u{0}",
        ),
        (
            vec!["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "Qwen/Qwen2-7B"],
            "python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen2-7B",
            "\u{0}",
        ),
        (
            vec!["python3", "-OO", "bench.py", "--iters", "100", "--warmup=10", "--dtype", "float16"],
            "python3 -OO bench.py --iters 100 --warmup=10 --dtype float16",
            "\u{0}",
        ),
        (
            vec!["python", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=8", "pretrain.py", "--max-steps", "1000"],
            "python -m torch.distributed.run --standalone --nproc-per-node=8 pretrain.py --max-steps 1000",
            "\u{0}",
        ),        (vec!["make", "-j8"], "make -j8", "\u{0}"),
        // docs/redaction.md's examples.
        (
            vec!["python", "train.py", "--run-tag", "alpha", "--notes", "first try"],
            "python train.py --run-tag *** --notes ***",
            "alpha",
        ),
        (vec!["python", "eval.py", "squad"], "python eval.py ***", "squad"),
        (vec!["x", "CUDA_VISIBLE_DEVICES=0,1", "FOO=bar"], "CUDA_VISIBLE_DEVICES=0,1 FOO=***", "bar"),
        (vec!["x", "--timeout", "10s", "--mem", "16GB", "--ratio", "50%"], "--timeout 10s --mem 16GB --ratio 50%", "\u{0}"),
    ]
}

/// Token shapes of the services a training machine talks to: realistic fakes, each with the
/// part that must not survive.
const TOKENS: [(&str, &str); 34] = [
    ("sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv", "Ab3dEf6hIj9k"),
    ("sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4", "Zx9Yw8Vu7Ts6"),
    ("sk_live_51HqR2kLmNoPqRsTuVwXyZ012", "51HqR2kLmNoP"),
    (
        "rk_live_51HqR2kLmNoPqRsTuVwXyZ345",
        "51HqR2kLmNoPqRsTuVwXyZ345",
    ),
    ("AIzaSyD3fG7hJ9kL2mN4pQ6rS8tU0vW1xY3zA5b", "SyD3fG7hJ9kL"),
    ("ya29.a0AfH6SMBx7Yq2Lm4Np6Rs8Tu0Vw", "a0AfH6SMBx7Y"),
    ("xoxb-2048-4096-q1W2e3R4t5Y6u7I8o9", "q1W2e3R4t5Y6"),
    ("xoxp-1111-2222-A1b2C3d4E5f6G7h8", "A1b2C3d4E5f6"),
    ("xapp-1-A0B1C2D3E4-55667788-zz99", "A0B1C2D3E4"),
    ("npm_aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2", "aB1cD2eF3gH4"),
    ("pypi-AgEIcHlwaS5vcmcCJDk1ZTNmYzQ2LWJhZGQ", "AgEIcHlwaS5v"),
    ("dckr_pat_7Hq2Lm9Np4Rs6Tu8Vw0Xy", "7Hq2Lm9Np4Rs"),
    ("dop_v1_0a1b2c3d4e5f60718293a4b5c6d7e8f9", "0a1b2c3d4e5f"),
    ("dapi0123456789abcdef0123456789abcdef", "0123456789abcdef01"),
    ("hvs.CAESIJqL2mN4pQ6rS8tU0vW1xY3z", "CAESIJqL2mN4"),
    ("SG.aBcDeFgHiJkLmNoPqRsTuV.wXyZ0123456789", "aBcDeFgHiJkL"),
    ("nvapi-Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk", "Qw3Er5Ty7Ui9"),
    ("gsk_Lp0Ok9Ij8Uh7Yg6Tf5Rd4Es3Wa2", "Lp0Ok9Ij8Uh7"),
    ("r8_Mn2Bv4Cx6Za8Sd0Fg2Hj4Kl6Qw8", "Mn2Bv4Cx6Za8"),
    ("xai-Po9Iu8Yt7Re6Wq5As4Df3Gh2Jk", "Po9Iu8Yt7Re6"),
    (
        "lsv2_pt_0f1e2d3c4b5a69788796a5b4c3d2e1f0_ab12",
        "0f1e2d3c4b5a",
    ),
    ("glpat-Xy7Zw6Vu5Ts4Rq3Po2Nm", "Xy7Zw6Vu5Ts4"),
    ("glrt-Ab1Cd2Ef3Gh4Ij5Kl6Mn", "Ab1Cd2Ef3Gh4"),
    ("GR1348941Qw2Er3Ty4Ui5Op6", "Qw2Er3Ty4Ui5"),
    ("ghp_16C7e42F292c6912E7710c838347Ae178B4a", "16C7e42F292c"),
    ("github_pat_11ABCDEFG0abcdefghijkl_mnopQRST", "11ABCDEFG0ab"),
    ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz123456", "AbCdEfGhIjKl"),
    ("AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
    (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N",
        "dozjgNryP4J3",
    ),
    (
        "0123456789abcdef0123456789abcdef01234567",
        "0123456789abcdef0123",
    ),
    ("Zk3Lm9Qp2Rs8Tu4Vw6Xy1Za5Bc7", "Zk3Lm9Qp2Rs8"),
    ("AGE-SECRET-KEY-1QQPQQ2QQ3QQ4QQ5QQ6QQ7QQ8", "1QQPQQ2QQ3QQ"),
    ("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", "a1b2c3d4e5f6"),
    ("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "MfKQ9r8GKYqr"),
];

/// Each token in the places a command line holds one: bare, after a safe flag (whose value is
/// kept, so the shape layer must catch it), after an unknown flag, in a URL under a safe flag,
/// in a shell's `-c` line, and in an environment assignment.
fn generated() -> Vec<Row> {
    let mut rows = Vec::new();
    for (token, core) in TOKENS {
        let row = |args: Vec<String>, kept: &str| (args, kept.to_string(), core.to_string());
        let s = |v: &[&str]| v.iter().map(ToString::to_string).collect::<Vec<_>>();
        rows.push(row(
            s(&["python", "train.py", token]),
            "python train.py ***",
        ));
        rows.push(row(
            s(&["python", "train.py", &format!("--model={token}")]),
            "--model=***",
        ));
        rows.push(row(
            s(&["python", "train.py", "--model", token]),
            "--model ***",
        ));
        rows.push(row(s(&["x", "--whatever", token]), "--whatever ***"));
        rows.push(row(
            s(&["x", "--url", &format!("https://h.example/p/{token}")]),
            "--url https://h.example/p/***",
        ));
        rows.push(row(
            s(&["bash", "-c", &format!("python t.py --x {token}")]),
            "bash -c python t.py --x ***",
        ));
        rows.push(row(
            s(&["env", &format!("SOME_VAR={token}"), "python"]),
            "SOME_VAR=*** python",
        ));
    }
    rows
}

fn all_rows() -> Vec<Row> {
    let s = |v: Vec<&str>| v.into_iter().map(ToString::to_string).collect();
    hand()
        .into_iter()
        .map(|(args, kept, gone)| (s(args), kept.to_string(), gone.to_string()))
        .chain(generated())
        .collect()
}

#[test]
fn every_shape_of_the_table_is_redacted_and_the_rest_kept() {
    let rows = all_rows();
    assert!(rows.len() >= 250, "{} shapes", rows.len());
    let mut failures = Vec::new();
    for (args, kept, gone) in &rows {
        let out = redact_args(args).join(" ");
        if !out.contains(kept.as_str()) || out.contains(gone.as_str()) {
            failures.push(format!(
                "{args:?}\n  -> {out:?}\n  keep {kept:?}, lose {gone:?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} shapes wrong:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

/// A snapshot redacts the joined command line again: nothing more may change.
#[test]
fn redacting_twice_changes_nothing_more() {
    for (args, _, _) in all_rows() {
        let once = redact_args(&args).join(" ");
        if !once.contains('\n') {
            assert_eq!(redact(&once), once, "{args:?}");
        }
    }
}
