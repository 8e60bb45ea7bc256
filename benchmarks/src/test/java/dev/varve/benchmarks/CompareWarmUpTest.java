package dev.varve.benchmarks;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.WalSyncMode;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** A compare child's warm-up runs the write phases it is about to measure, and leaves nothing behind. */
@Timeout(120)
class CompareWarmUpTest {
    @Test
    void warmsUpOnEveryWritePhaseToBeMeasuredAndRemovesItsStore(@TempDir Path tmp) throws Exception {
        CompareSettings s = new CompareSettings(1, 1, 10_000, 10_000, 10, 1, 64L << 20, 16L << 20, 1000, 4096, 4, WalSyncMode.LOG_ONLY);
        byte[][] pool = Values.textPool(CompareChild.VALUE_POOL, CompareSettings.MIN_VALUE_BYTES, CompareSettings.MAX_VALUE_BYTES, 1);
        Path dir = tmp.resolve("warmup");
        // a gets phase is not warmed up (its preload is), a writers phase is: its own caller-placed table describes the store
        String description = CompareChild.warmUp(CompareSetup.VARVE_RF_SNAPPY, s, List.of(ComparePhase.GETS_1, ComparePhase.WRITERS_2), dir, pool);
        assertTrue(description.contains("caller-placed"), description);
        assertFalse(Files.exists(dir), "the warm-up's store is deleted");
    }
}
