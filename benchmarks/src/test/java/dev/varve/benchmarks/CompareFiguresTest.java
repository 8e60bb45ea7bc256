package dev.varve.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.WalSyncMode;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** What the compare harness reports for a system, and how a run that went wrong ends. */
@Timeout(180)
class CompareFiguresTest {
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
    void aCompareRunWithAFailedPhaseWritesItsReportAndExitsFailed(@TempDir Path tmp) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        // a batch of 100,000 puts is more than Varve takes in one write with the harness's page memory: the phase fails
        int code = Main.run(new String[] {"--compare", "--systems", "varve_rf_snappy", "--phases", "full_speed_batch", "--batch", "100000",
                        "--seconds", "1", "--dir", tmp.resolve("d").toString(), "--out", tmp.resolve("o").toString()},
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(Main.FAILED, code, "a run whose phase failed is not a success: " + out);
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("1 of 1 phase runs failed"), err::toString);
        String report = Files.readString(tmp.resolve("o").resolve(CompareReport.FILE));
        assertTrue(report.contains("Failures:"), report);
    }
}
