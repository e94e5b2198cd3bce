//! What an isolated run ([`Bounded::isolated`]) can reach: no network (a TCP listener of this
//! process on loopback, reached by the same program when not isolated), and a PID namespace
//! whose init it is. As root (CI), the machine must allow both.

use std::net::TcpListener;

use super::*;
use crate::bounded::isolate::Isolation;

/// bash, connecting to `port` on loopback, printing whether it could.
fn connect(port: u16) -> Bounded {
    Bounded::new("/bin/bash", limits()).args([
        "-c",
        &format!(
            "if exec 3<>/dev/tcp/127.0.0.1/{port}; then echo reached; else echo unreachable; fi"
        ),
    ])
}

#[test]
fn an_isolated_run_reaches_no_network_where_the_machine_allows() {
    if !Path::new("/bin/bash").is_file() {
        assert!(!ci(), "bash is needed to connect in the test");
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // The control: the same program, not isolated, reaches it.
    let done = connect(port).run().unwrap();
    assert_eq!(String::from_utf8_lossy(&done.stdout).trim(), "reached");

    let isolation = Isolation::find();
    if ci() && root() {
        assert_eq!(
            *isolation,
            Isolation::Kernel,
            "as root, namespaces can be made"
        );
    }
    let done = connect(port).isolated().run().unwrap();
    let said = String::from_utf8_lossy(&done.stdout);
    if isolation.holds() {
        assert_eq!(said.trim(), "unreachable", "{isolation}");
    } else {
        eprintln!("SKIPPED: no network namespace here: {isolation}");
    }
}

#[test]
fn an_isolated_run_is_the_init_of_its_own_pid_namespace() {
    let isolation = Isolation::find();
    for memory in [MemoryBound::CgroupElseWatchdog, MemoryBound::Watchdog] {
        let done = sh("echo $$", limits())
            .memory_bound(memory)
            .isolated()
            .run()
            .unwrap();
        let pid = String::from_utf8_lossy(&done.stdout);
        if isolation.holds() {
            assert_eq!(pid.trim(), "1", "{isolation}, {memory:?}");
        } else {
            assert_ne!(pid.trim(), "1", "{isolation}");
        }
    }
}
