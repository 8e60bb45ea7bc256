package dev.varve.benchmarks;

import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.engine.RecoveryReport;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * The recovering JVM of {@link RecoveryTimeJob}, started once the {@link DirtyPageWriter} child is killed: a real
 * recovery after {@code kill -9} starts in a fresh JVM, so the timed {@link Varve#open} runs first in one that has
 * loaded and compiled none of the engine before. It then checks a sample of the acknowledged puts, closes the store,
 * counts the WAL's physical records and prints its figures as one {@link #RESULT} line for the parent to parse.
 *
 * <p>Arguments: {@code DIR MODE COMPRESSION SYNC DIRTY_MIB ACKED_PUTS CENSUS_DIR}.
 */
public final class RecoveryChild {
    static final String RESULT = "RESULT";
    static final int VERIFY_SAMPLE = 10_000;

    /** The figures of one recovery; {@code restoredFrom} is last on the line as it may hold spaces. */
    record Recovered(long openNanos, long durableNanos, long missing, long closeNanos, long physicalRecords,
                     int restoredPages, long replayedRecords, boolean walTailCut, String restoredFrom) {
        String line() {
            return String.join(" ", RESULT, Long.toString(openNanos), Long.toString(durableNanos), Long.toString(missing),
                    Long.toString(closeNanos), Long.toString(physicalRecords), Integer.toString(restoredPages),
                    Long.toString(replayedRecords), Boolean.toString(walTailCut), restoredFrom);
        }

        static Recovered parse(String line) {
            String[] f = line.split(" ", 10);
            return new Recovered(Long.parseLong(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3]), Long.parseLong(f[4]),
                    Long.parseLong(f[5]), Integer.parseInt(f[6]), Long.parseLong(f[7]), Boolean.parseBoolean(f[8]), f[9]);
        }
    }

    private RecoveryChild() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 7) {
            System.err.println("usage: RecoveryChild DIR MODE COMPRESSION SYNC DIRTY_MIB ACKED_PUTS CENSUS_DIR");
            System.exit(2);
        }
        VarveConfig cfg = DirtyPageWriter.config(Path.of(args[0]), RecoveryMode.valueOf(args[1]),
                RecoveryCompression.valueOf(args[2]), WalSyncMode.valueOf(args[3]), Integer.parseInt(args[4]));
        System.out.println(recover(cfg, Long.parseLong(args[5]), Path.of(args[6])).line());
    }

    @SuppressWarnings("try") // the store is closed inside its try, to time the closing checkpoint
    private static Recovered recover(VarveConfig cfg, long acked, Path censusDir) throws IOException {
        // kept aside now and counted once the store is closed, so the timed open runs the WAL's scan code cold
        try (WalCensus census = WalCensus.keep(cfg, censusDir)) {
            long t0 = System.nanoTime();
            long openNanos;
            long durableNanos;
            long closeNanos;
            long missing;
            RecoveryReport report;
            try (Varve store = Varve.open(cfg)) {
                openNanos = System.nanoTime() - t0;
                report = store.recoveryReport();
                System.out.printf("  open took %,.0f ms; %s%n", openNanos / 1e6, report);
                store.checkpoint().join(); // starts after the one open left to the background, which writes what replay changed
                durableNanos = System.nanoTime() - t0;
                missing = missingOfSample(store.table(DirtyPageWriter.TABLE), acked);
                long t1 = System.nanoTime();
                store.close();
                closeNanos = System.nanoTime() - t1;
            }
            return new Recovered(openNanos, durableNanos, missing, closeNanos, census.physicalRecords(), report.restoredPages(),
                    report.replayedRecords(), report.walTailCut() != null, report.restoredFrom());
        }
    }

    /** Reads back the last acknowledged put and a random sample of the others; counts those missing or wrong. */
    private static long missingOfSample(Table table, long acked) {
        UniquePutLoad expected = new UniquePutLoad(0, DirtyPageWriter.SEED);
        SplittableRandom rnd = new SplittableRandom(acked);
        long missing = 0;
        for (int i = 0; i < VERIFY_SAMPLE; i++) {
            long id = i == 0 ? acked - 1 : rnd.nextLong(acked);
            if (!Arrays.equals(table.get(Keys.of(id)), expected.valueOf(id))) missing++;
        }
        return missing;
    }
}
