//! The drills' own Postgres, Redis and NATS (private instances on free ports, so killing
//! and restarting them never touches a developer's services) and the Warden processes,
//! each a child that can be killed, stopped and started again with the same arguments.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

/// How long Postgres, Redis or NATS may take to accept connections after a (re)start: it
/// only catches one that never comes up, so a loaded machine's slow start is no failure.
const SERVICE_START: Duration = Duration::from_secs(180);

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// One child process, restartable with the same command line.
pub struct Proc {
    pub name: String,
    program: PathBuf,
    args: Vec<String>,
    env: BTreeMap<String, String>,
    log: PathBuf,
    child: Option<Child>,
    /// Runs under this uid/gid (Postgres refuses to run as root).
    run_as: Option<(u32, u32)>,
}

impl Proc {
    pub fn new(name: &str, program: impl Into<PathBuf>, args: &[&str], log_dir: &Path) -> Proc {
        Proc {
            name: name.to_string(),
            program: program.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: BTreeMap::new(),
            log: log_dir.join(format!("{name}.log")),
            child: None,
            run_as: None,
        }
    }

    pub fn envs(mut self, env: &BTreeMap<String, String>) -> Proc {
        self.env
            .extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
        self
    }

    pub fn env(mut self, k: &str, v: impl ToString) -> Proc {
        self.env.insert(k.to_string(), v.to_string());
        self
    }

    pub fn start(&mut self) -> anyhow::Result<()> {
        if self.is_running() {
            return Ok(());
        }
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .with_context(|| format!("log file {}", self.log.display()))?;
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .envs(&self.env)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        if let Some((uid, gid)) = self.run_as {
            use std::os::unix::process::CommandExt;
            cmd.uid(uid).gid(gid);
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {} ({})", self.name, self.program.display()))?;
        self.child = Some(child);
        Ok(())
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// kill -9 and reap.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Send `signal`, wait up to `timeout` for the exit, then kill -9.
    pub fn stop_with(&mut self, signal: i32, timeout: Duration) -> Option<ExitStatus> {
        let mut c = self.child.take()?;
        // SAFETY: plain kill(2) on our own child's pid.
        #[allow(unsafe_code)]
        unsafe {
            libc::kill(c.id() as libc::pid_t, signal);
        }
        let deadline = Instant::now() + timeout;
        loop {
            match c.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                _ => {
                    let _ = c.kill();
                    return c.wait().ok();
                }
            }
        }
    }

    /// SIGTERM, as an orchestrator stops a pod. The wait only catches a process that hangs
    /// (a dispatcher drains for at most DISPATCH_DRAIN_TIMEOUT, 20 s): generous, so a
    /// loaded machine's slow exit is never taken for a failure.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        self.stop_with(libc::SIGTERM, Duration::from_secs(120))
    }

    pub fn log_tail(&self, lines: usize) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Poll `url` until it answers 2xx.
pub async fn wait_http(http: &reqwest::Client, url: &str, timeout: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(r) = http.get(url).send().await
            && r.status().is_success()
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{url} did not answer within {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Poll until something accepts TCP connections on the port.
pub async fn wait_tcp(port: u16, timeout: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        if Instant::now() > deadline {
            bail!("nothing listens on 127.0.0.1:{port} after {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Private Postgres, Redis and NATS for one `make faults` run.
pub struct Services {
    pub dir: PathBuf,
    pub pg: Proc,
    pub pg_port: u16,
    pub redis: Proc,
    pub redis_port: u16,
    pub nats: Proc,
    pub nats_port: u16,
}

impl Services {
    /// initdb a fresh cluster and start all three. `dir` must not exist yet.
    pub async fn start(dir: &Path) -> anyhow::Result<Services> {
        fs::create_dir_all(dir)?;
        let logs = dir.join("logs");
        fs::create_dir_all(&logs)?;
        let bin = pg_bindir()?;
        let pgdata = dir.join("pgdata");
        fs::create_dir_all(&pgdata)?;
        let run_as = postgres_user_if_root()?;
        if let Some((uid, gid)) = run_as {
            use std::os::unix::fs::PermissionsExt;
            // The postgres user must reach its data directory through ours.
            fs::set_permissions(dir, fs::Permissions::from_mode(0o755))?;
            std::os::unix::fs::chown(&pgdata, Some(uid), Some(gid))?;
            std::os::unix::fs::chown(&logs, Some(uid), Some(gid))?;
        }
        let pgdata_s = pgdata.to_string_lossy().to_string();
        let mut initdb = Proc::new(
            "initdb",
            bin.join("initdb"),
            &[
                "-D",
                &pgdata_s,
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            &logs,
        );
        initdb.run_as = run_as;
        initdb.start()?;
        let status = initdb
            .child
            .take()
            .expect("started")
            .wait()
            .context("initdb")?;
        if !status.success() {
            bail!("initdb failed ({status}):\n{}", initdb.log_tail(20));
        }
        let pg_port = free_port();
        let port_s = pg_port.to_string();
        let mut pg = Proc::new(
            "postgres",
            bin.join("postgres"),
            &[
                "-D",
                &pgdata_s,
                "-p",
                &port_s,
                "-k",
                &pgdata_s,
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "max_connections=400",
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
            ],
            &logs,
        );
        pg.run_as = run_as;

        let redis_port = free_port();
        let redis = Proc::new(
            "redis",
            "redis-server",
            &[
                "--port",
                &redis_port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            &logs,
        );
        let nats_port = free_port();
        let js = dir.join("jetstream");
        let nats = Proc::new(
            "nats",
            "nats-server",
            &[
                "-a",
                "127.0.0.1",
                "-p",
                &nats_port.to_string(),
                "-js",
                "-sd",
                &js.to_string_lossy(),
            ],
            &logs,
        );
        let mut s = Services {
            dir: dir.to_path_buf(),
            pg,
            pg_port,
            redis,
            redis_port,
            nats,
            nats_port,
        };
        s.start_postgres().await?;
        s.start_redis().await?;
        s.start_nats().await?;
        Ok(s)
    }

    pub fn pg_url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.pg_port)
    }

    pub async fn start_postgres(&mut self) -> anyhow::Result<()> {
        self.pg.start()?;
        let deadline = Instant::now() + SERVICE_START;
        while AsyncPgConnection::establish(&self.pg_url("postgres"))
            .await
            .is_err()
        {
            if Instant::now() > deadline || !self.pg.is_running() {
                bail!("postgres did not start:\n{}", self.pg.log_tail(20));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(())
    }

    /// Fast shutdown (SIGINT): sessions are cut, as in a failover or a restart.
    pub fn stop_postgres(&mut self) {
        self.pg.stop_with(libc::SIGINT, Duration::from_secs(30));
    }

    pub async fn start_redis(&mut self) -> anyhow::Result<()> {
        self.redis.start()?;
        wait_tcp(self.redis_port, SERVICE_START).await
    }

    pub async fn start_nats(&mut self) -> anyhow::Result<()> {
        self.nats.start()?;
        wait_tcp(self.nats_port, SERVICE_START).await
    }

    pub async fn create_database(&self, name: &str) -> anyhow::Result<()> {
        let mut c = AsyncPgConnection::establish(&self.pg_url("postgres")).await?;
        diesel::sql_query(format!("CREATE DATABASE {name}"))
            .execute(&mut c)
            .await?;
        Ok(())
    }

    /// The environment every Warden process of a drill shares.
    pub fn env(&self, db: &str, redis_db: u8) -> BTreeMap<String, String> {
        [
            ("DB_HOST", "127.0.0.1".to_string()),
            ("DB_PORT", self.pg_port.to_string()),
            ("DB_USER", "postgres".into()),
            ("DB_PASSWORD", "unused-trust-auth".into()),
            ("DB_NAME", db.into()),
            ("DB_SSLMODE", "disable".into()),
            ("REDIS_ADDR", format!("127.0.0.1:{}", self.redis_port)),
            ("REDIS_DB", redis_db.to_string()),
            ("NATS_URL", format!("nats://127.0.0.1:{}", self.nats_port)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

/// The newest installed server's bin directory (Debian: /usr/lib/postgresql/<v>/bin).
fn pg_bindir() -> anyhow::Result<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    found.sort();
    if let Some((_, bin)) = found.pop() {
        return Ok(bin);
    }
    let out = Command::new("pg_config").arg("--bindir").output();
    if let Ok(out) = out
        && out.status.success()
    {
        let bin = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if bin.join("initdb").exists() {
            return Ok(bin);
        }
    }
    bail!("no Postgres server binaries (initdb) found; run `make dev` or scripts/services.sh first")
}

/// Postgres refuses to run as root: use the `postgres` account then.
fn postgres_user_if_root() -> anyhow::Result<Option<(u32, u32)>> {
    // SAFETY: getuid has no preconditions; getpwnam reads a static entry we copy at once.
    #[allow(unsafe_code)]
    unsafe {
        if libc::getuid() != 0 {
            return Ok(None);
        }
        let pw = libc::getpwnam(c"postgres".as_ptr());
        if pw.is_null() {
            bail!("running as root and there is no `postgres` user to run the drills' Postgres");
        }
        Ok(Some(((*pw).pw_uid, (*pw).pw_gid)))
    }
}
