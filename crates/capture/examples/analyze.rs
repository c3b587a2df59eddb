//! Prints a capture's evidence as JSON:
//! `cargo run -p plumb-capture --example analyze -- FILE.pcap[.gz]`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: analyze FILE (pcap or pcapng, maybe gzip)");
        return ExitCode::from(2);
    };
    match plumb_capture::analyze_file(path.as_ref(), plumb_record::capture::Limits::default()) {
        Ok(a) => match serde_json::to_string_pretty(&a) {
            Ok(j) => {
                println!("{j}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("analyze: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("analyze: {e}");
            ExitCode::FAILURE
        }
    }
}
