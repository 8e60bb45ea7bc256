package dev.varve.benchmarks;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.List;

/**
 * Entry point of {@code varve-benchmarks.jar}: picks the job named by the first flag (see {@link Options#USAGE}) and
 * exits 0 on success, 1 when a job fails (a mismatch, a child that died), 2 on bad arguments.
 */
public final class Main {
    static final int OK = 0;
    static final int FAILED = 1;
    static final int USAGE = 2;
    static final String LOG_LEVEL_PROPERTY = "org.slf4j.simpleLogger.defaultLogLevel";

    private Main() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--jmh")) {
            org.openjdk.jmh.Main.main(Arrays.copyOfRange(args, 1, args.length));
            return;
        }
        System.exit(run(args, System.out, System.err));
    }

    /** Runs the job {@code args} name; returns the exit code. */
    static int run(String[] args, PrintStream out, PrintStream err) {
        Options opts;
        try {
            opts = Options.parse(List.of(args));
        } catch (Options.UsageException e) {
            err.println("error: " + e.getMessage());
            err.print(Options.USAGE);
            return USAGE;
        }
        // before the engine's first logger is made; a -D on the command line still wins
        if (System.getProperty(LOG_LEVEL_PROPERTY) == null) System.setProperty(LOG_LEVEL_PROPERTY, opts.verbose ? "info" : "warn");
        try {
            switch (opts.job) {
                case HELP -> out.print(Options.USAGE);
                case DEMO -> new DemoJob(opts, out).run();
                case COMPARE -> new CompareJob(opts, out).run();
                case RECOVERY_MODES -> new RecoveryModeComparison(opts, out).run();
                case RECOVERY_TIME -> new RecoveryTimeJob(opts, out).run();
                case RETENTION -> new RetentionComparison(opts, out).run();
                case SNAPSHOT_COST -> new SnapshotCostJob(opts, out).run();
                case CHAIN_COST -> new ChainCostJob(opts, out).run();
                case SHIP -> new ShipJob(opts, out).run();
                case INFINISPAN -> new InfinispanComparison(opts, out).run();
            }
            return OK;
        } catch (DemoJob.MismatchException | RecoveryTimeJob.FailedException | CompareJob.PhasesFailedException e) {
            err.println("FAILED: " + e.getMessage());
            return FAILED;
        } catch (Exception e) {
            err.println("FAILED: " + e);
            e.printStackTrace(err);
            return FAILED;
        }
    }
}
