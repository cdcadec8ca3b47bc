use std::process::ExitCode;
#[derive(clap::Args)]
pub(crate) struct BenchArgs {}
#[derive(clap::Args)]
pub(crate) struct RankArgs {}
pub(crate) fn run(_: BenchArgs) -> ExitCode {
    ExitCode::FAILURE
}
pub(crate) fn rank(_: RankArgs) -> ExitCode {
    ExitCode::FAILURE
}
