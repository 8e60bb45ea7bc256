package dev.varve.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.WalSyncMode;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** What the compare harness reports for a system, and how a run that went wrong ends. */
@Timeout(180)
class CompareFiguresTest {
    /** What a compare run with a failed phase printed, returned and wrote. */
    private record FailedRun(int code, String out, String err, String report) {}

    /** Run once for the two tests that read it: each run starts a child JVM, a few seconds of a CI run's CPU. */
    private static FailedRun failedRun;

    /**
     * A batch of 100,000 puts is more than Varve takes in one write with the harness's page memory: the one phase fails,
     * and the report is written all the same. No warm-up: it would open a store of its own and fail on the same first
     * batch before the phase does. --long and --sync shape nothing that fails; they are there for the report to name.
     */
    @BeforeAll
    static void runACompareWhosePhaseFails(@TempDir Path tmp) throws Exception {
        String[] args = {"--compare", "--long", "--phases", "full_speed_batch", "--systems", "varve_rf_snappy", "--sync", "fsync",
                "--seconds", "1", "--batch", "100000", "--warmup-seconds", "0", "--dir", tmp.resolve("d").toString(), "--out", tmp.resolve("o").toString()};
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        failedRun = new FailedRun(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8),
                Files.readString(tmp.resolve("o").resolve(CompareReport.FILE)));
    }

    private static CompareSettings settings() {
        return new CompareSettings(1, 0, 10_000, 10_000, 10, 1, 64L << 20, 16L << 20, 1000, 4096, 4, WalSyncMode.LOG_ONLY);
    }

    @Test
    void aSystemWithoutCheckpointsShowsNoCheckpointFiguresNotZeros(@TempDir Path tmp) throws Exception {
        byte[][] pool = Values.textPool(CompareChild.VALUE_POOL, CompareSettings.MIN_VALUE_BYTES, CompareSettings.MAX_VALUE_BYTES, 1);
        PhaseResult rocks = CompareChild.runPhase(CompareSetup.ROCKSDB, settings(), ComparePhase.FULL_SPEED, tmp.resolve("rocks"), 1, pool);
        assertTrue(rocks.get("ops") > 0);
        // RocksDB has no checkpoints: "0 checkpoint pages per 1,000 puts" would read as a system that writes no pages
        for (String key : List.of("checkpoints", "cpPages", "rfBytes", "cpTotalNanos", "lockNanos"))
            assertNull(rocks.get(key), "RocksDB has no " + key + ", got " + rocks.get(key));
        PhaseResult varve = CompareChild.runPhase(CompareSetup.VARVE_RF_SNAPPY, settings(), ComparePhase.FULL_SPEED, tmp.resolve("varve"), 1, pool);
        assertNotNull(varve.get("checkpoints"), "Varve has checkpoints, counted even when none completed");
    }

    @Test
    void aPhaseWhosePreloadFailsClosesItsStore(@TempDir Path tmp) {
        // 8 MiB of page memory: a preload batch of 100 puts is more than Varve takes in one write there, so the preload throws
        CompareSettings small = new CompareSettings(1, 0, 20_000, 10_000, 10, 1, 8L << 20, 2L << 20, 1000, 4096, 4, WalSyncMode.LOG_ONLY);
        byte[][] pool = Values.textPool(CompareChild.VALUE_POOL, CompareSettings.MIN_VALUE_BYTES, CompareSettings.MAX_VALUE_BYTES, 1);
        Path dir = tmp.resolve("gets");
        assertThrows(IllegalArgumentException.class, () -> CompareChild.runPhase(CompareSetup.VARVE_RF_SNAPPY, small, ComparePhase.GETS_1, dir, 1, pool));
        // left open, the store kept its threads and page memory in the child JVM for every later phase (Ignite's node, its
        // name taken, made every later Ignite phase fail to start)
        List<String> left = Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive).map(Thread::getName)
                .filter(n -> n.contains(dir.toString())).toList();
        assertTrue(left.isEmpty(), "threads of the failed phase's store still run: " + left);
    }

    @Test
    void figuresOfAChildWhoseWarmUpFailedAreNotReportedAsComparable(@TempDir Path tmp) throws Exception {
        Path file = tmp.resolve("result.txt");
        Files.writeString(file, "D Varve config\nE WARMUP java.lang.IllegalStateException: boom\nP FULL_SPEED ops=1000 nanos=1000000000\n");
        PhaseResult r = PhaseResult.read(file, CompareSetup.VARVE_RF_SNAPPY, WalSyncMode.LOG_ONLY, List.of(ComparePhase.FULL_SPEED),
                "child JVM exited with code 1").get(0);
        // measured cold while every other system was warmed up: its figures would stand in the table as if alike
        assertNotNull(r.error(), "figures after a failed warm-up were reported: " + r.values());
        assertTrue(r.error().contains("warm-up failed") && r.error().contains("boom"), r.error());
    }

    @Test
    void theDurabilityLineNamesWhatEverySystemWasSetTo() {
        for (WalSyncMode sync : WalSyncMode.values()) {
            String meaning = CompareReport.syncMeaning(sync);
            for (String system : List.of("Varve", "Ignite", "H2", "RocksDB")) assertTrue(meaning.contains(system), sync + ": " + meaning);
        }
        assertTrue(CompareReport.syncMeaning(WalSyncMode.LOG_ONLY).contains("WriteOptions.sync=false"));
        assertTrue(CompareReport.syncMeaning(WalSyncMode.FSYNC).contains("WriteOptions.sync=true"));
        // BACKGROUND is no common level: Varve's adds an fsync a second to LOG_ONLY, Ignite's does not survive a process crash
        assertTrue(CompareReport.syncMeaning(WalSyncMode.BACKGROUND).contains("not the same durability"));
    }

    @Test
    void aCompareRunWithAFailedPhaseWritesItsReportAndExitsFailed() {
        assertEquals(Main.FAILED, failedRun.code(), "a run whose phase failed is not a success: " + failedRun.out());
        assertTrue(failedRun.err().contains("1 of 1 phase runs failed"), failedRun.err());
        assertTrue(failedRun.report().contains("Failures:"), failedRun.report());
    }

    @Test
    void theReportNamesEveryFlagThatShapedTheRun() {
        // it said "--compare --long --systems varve_rf_snappy": every phase, LOG_ONLY and FSYNC, 20 s each
        assertTrue(failedRun.report().contains("Generated by `java -jar benchmarks/target/varve-benchmarks.jar --compare --long --phases "
                + "full_speed_batch --systems varve_rf_snappy --sync FSYNC --seconds 1 --batch 100000 --warmup-seconds 0`"), failedRun.report());
    }
}
