//! The hosts the docs' command lines name, built for them: two network
//! namespaces joined by a veth pair — near (`eth0`, 198.18.0.1) where a
//! command runs, far (198.18.0.2) with plumb servers on the ports the docs
//! use (5201; 873 for the rsync examples; 445, 22 and 443 for the
//! handshake examples) — and one transfer on port 873 that runs while the
//! commands do, for the lines that explain "the running rsync connections".
//! A scratch directory holds the files the lines read (a `-J` document as
//! `result.json`, `before.json`, `after.json`; tcpdump's capture of the
//! port-873 transfer as `backup.pcap` and `capture.pcap`, a lab capture as
//! `near.pcap` and `transfer.pcap`; `top
//! --json` readings as `top.ndjson`; `backup/backup.tar`) and
//! `bin/plumb`, first on the `PATH`, so a line runs as shown. Dropping the
//! scene kills every process in both namespaces and deletes them.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The far host's address: what `HOST` and `*.example` become.
pub const FAR: &str = "198.18.0.2";
/// The ports far serves.
const FAR_PORTS: &[&str] = &["5201", "873", "445", "22", "443"];

pub struct Scene {
    pub near: String,
    pub far: String,
    pub dir: PathBuf,
    background: Vec<Child>,
}

/// What one command did.
pub struct Ran {
    pub status: Option<ExitStatus>,
    pub output: String,
}

impl Scene {
    /// Builds the namespaces, starts far's servers and the rsync-like
    /// transfer, and writes the files. `plumb` is the binary under test.
    pub fn build(plumb: &str, tag: &str) -> Scene {
        let id = std::process::id();
        let dir = std::env::temp_dir().join(format!("plumb-docs-{tag}-{id}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("bin")).expect("scratch dir");
        std::os::unix::fs::symlink(plumb, dir.join("bin/plumb")).expect("bin/plumb");
        let mut scene = Scene {
            near: format!("plumb-{id}-docs{tag}n"),
            far: format!("plumb-{id}-docs{tag}f"),
            dir,
            background: Vec::new(),
        };
        scene.link();
        for port in FAR_PORTS {
            let far = scene.far.clone();
            scene.serve(&far, &format!("plumb -s -p {port}"), "listening");
        }
        let near = scene.near.clone();
        let rsync = format!("plumb -c {FAR} -p 873 -t 300 -b 20M -i 0");
        scene
            .background
            .push(scene.spawn(&near, &rsync, "rsync.out"));
        scene.files();
        scene
    }

    fn link(&self) {
        let (n, f) = (self.near.as_str(), self.far.as_str());
        for args in [
            vec!["netns", "add", n],
            vec!["netns", "add", f],
            vec![
                "-n", n, "link", "add", "eth0", "type", "veth", "peer", "eth1", "netns", f,
            ],
            vec!["-n", n, "addr", "add", "198.18.0.1/30", "dev", "eth0"],
            vec!["-n", f, "addr", "add", "198.18.0.2/30", "dev", "eth1"],
            vec!["-n", n, "link", "set", "eth0", "up"],
            vec!["-n", f, "link", "set", "eth1", "up"],
            vec!["-n", n, "link", "set", "lo", "up"],
            vec!["-n", f, "link", "set", "lo", "up"],
        ] {
            let st = Command::new("ip").args(&args).status().expect("ip");
            assert!(st.success(), "ip {args:?} failed");
        }
    }

    /// The files the docs' lines read, the `-J` documents from one short
    /// test against far.
    fn files(&self) {
        let cmd = format!("plumb -c {FAR} -t 1 -J > result.json");
        let json = self.run(&self.near.clone(), &cmd, 30);
        assert_eq!(
            json.status.map(|s| s.success()),
            Some(true),
            "{}",
            json.output
        );
        for name in ["before.json", "after.json"] {
            std::fs::copy(self.dir.join("result.json"), self.dir.join(name)).expect("json file");
        }
        let cap =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../capture/tests/lab/stall-near.pcap");
        for name in ["near.pcap", "transfer.pcap"] {
            std::fs::copy(&cap, self.dir.join(name)).expect("capture file");
        }
        // The rsync-like transfer, as the reader's tcpdump would have it.
        let dump = "timeout -s INT 2 tcpdump -i eth0 -s 128 -w backup.pcap tcp port 873";
        let dumped = self.run(&self.near.clone(), dump, 10);
        assert!(
            dumped.output.contains("packets captured"),
            "{}",
            dumped.output
        );
        std::fs::copy(self.dir.join("backup.pcap"), self.dir.join("capture.pcap")).expect("copy");
        let top = self.run(
            &self.near.clone(),
            "plumb top -n 2 --json -p 873 > top.ndjson",
            30,
        );
        assert_eq!(
            top.status.map(|s| s.success()),
            Some(true),
            "{}",
            top.output
        );
        std::fs::create_dir_all(self.dir.join("backup")).expect("backup/");
        std::fs::write(self.dir.join("backup/backup.tar"), vec![7u8; 2 << 20]).expect("tar");
    }

    /// `sh -c CMD` in namespace `ns` (or this one, for ""), in the scratch
    /// directory, its own process group, its output to `out`.
    fn spawn(&self, ns: &str, cmd: &str, out: &str) -> Child {
        let file = std::fs::File::create(self.dir.join(out)).expect("output file");
        let path = format!(
            "{}:{}",
            self.dir.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut c = if ns.is_empty() {
            Command::new("sh")
        } else {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns, "sh"]);
            c
        };
        c.args(["-c", cmd])
            .current_dir(&self.dir)
            .env("PATH", path)
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("dup"))
            .stderr(file)
            .process_group(0)
            .spawn()
            .expect("sh starts")
    }

    /// Runs `cmd` to its end, killing its process group after `limit` s
    /// (a status of `None` then).
    pub fn run(&self, ns: &str, cmd: &str, limit: u64) -> Ran {
        let mut child = self.spawn(ns, cmd, "out.txt");
        let status = wait(&mut child, Duration::from_secs(limit));
        if status.is_none() {
            signal(&child, "KILL");
            let _ = child.wait();
        }
        Ran {
            status,
            output: self.read("out.txt"),
        }
    }

    /// Starts `cmd`, waits (at most 15 s) until its output shows `mark`,
    /// then interrupts it as Ctrl-C does and waits (at most 15 s) for it
    /// to end. Ok with its output, or Err saying which step failed.
    pub fn start_stop(&self, ns: &str, cmd: &str, mark: &str) -> Result<String, String> {
        let mut child = self.spawn(ns, cmd, "serve.txt");
        let t0 = Instant::now();
        while !self.read("serve.txt").contains(mark) {
            if child.try_wait().ok().flatten().is_some() || t0.elapsed() > Duration::from_secs(15) {
                signal(&child, "KILL");
                let _ = child.wait();
                return Err(format!("never showed {mark:?}: {}", self.read("serve.txt")));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        signal(&child, "INT");
        let ended = wait(&mut child, Duration::from_secs(15));
        if ended.is_none() {
            signal(&child, "KILL");
            let _ = child.wait();
            return Err(format!("did not end on Ctrl-C: {}", self.read("serve.txt")));
        }
        Ok(self.read("serve.txt"))
    }

    /// A server in `ns`, left running until the scene drops.
    fn serve(&mut self, ns: &str, cmd: &str, mark: &str) {
        let out = format!("serve-{}.txt", self.background.len());
        let child = self.spawn(ns, cmd, &out);
        let t0 = Instant::now();
        while !self.read(&out).contains(mark) {
            assert!(
                t0.elapsed() < Duration::from_secs(15),
                "{cmd}: {}",
                self.read(&out)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        self.background.push(child);
    }

    fn read(&self, name: &str) -> String {
        String::from_utf8_lossy(&std::fs::read(self.dir.join(name)).unwrap_or_default()).into()
    }
}

/// Waits for `child` at most `limit`.
fn wait(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let t0 = Instant::now();
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            return Some(st);
        }
        if t0.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends `sig` to the child's process group.
fn signal(child: &Child, sig: &str) {
    let _ = Command::new("kill")
        .args([format!("-{sig}"), "--".into(), format!("-{}", child.id())])
        .status();
}

impl Drop for Scene {
    fn drop(&mut self) {
        for c in &mut self.background {
            signal(c, "KILL");
            let _ = c.wait();
        }
        for ns in [&self.near, &self.far] {
            // Whatever a line left running in a namespace goes with it.
            if let Ok(o) = Command::new("ip").args(["netns", "pids", ns]).output() {
                for pid in String::from_utf8_lossy(&o.stdout).split_whitespace() {
                    let _ = Command::new("kill").args(["-KILL", pid]).status();
                }
            }
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
