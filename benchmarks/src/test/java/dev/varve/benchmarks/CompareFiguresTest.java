package dev.varve.benchmarks;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.WalSyncMode;

import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** What the compare harness reports for a system. */
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
}
