package dev.varve.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.WalSyncMode;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The compare harness's gets phases: every timed get is checked, so a store answering wrongly fails the phase. */
@Timeout(300)
class CompareGetsTest {
    private static final long KEYS = 20_000;

    private static CompareSettings settings() {
        return new CompareSettings(1, 0, KEYS, 10_000, 100, 1, 64L << 20, 16L << 20, 1000, 4096, 4, WalSyncMode.LOG_ONLY);
    }

    @Test
    void getsPhaseReadsEveryPreloadedKeyBackFromVarveAndRocksDb(@TempDir Path tmp) throws Exception {
        byte[][] pool = Values.textPool(CompareChild.VALUE_POOL, CompareSettings.MIN_VALUE_BYTES, CompareSettings.MAX_VALUE_BYTES, 1);
        for (CompareSetup setup : List.of(CompareSetup.VARVE_RF_SNAPPY, CompareSetup.ROCKSDB)) {
            PhaseResult r = CompareChild.runPhase(setup, settings(), ComparePhase.GETS_2, tmp.resolve(setup.name()), 1, pool);
            assertTrue(r.get("ops") > 0, setup + ": no get was timed");
            assertEquals(r.get("ops"), r.get("calls"), setup + ": every get is one timed call");
            // where the phase's CPU went: the two readers' share is part of the process's (read in 10 ms clock ticks
            // at both ends, hence the two ticks), and they kept busy
            assertTrue(r.get("writerCpuNanos") > 0, setup + ": the readers' CPU time was measured");
            assertTrue(r.get("writerCpuNanos") <= r.get("cpuNanos") + 20_000_000L,
                    setup + ": the readers' CPU " + r.get("writerCpuNanos") + " ns is part of the process's " + r.get("cpuNanos") + " ns");
            assertTrue(r.get("jitMillis") >= 0, setup + ": the compiler's time in the phase was measured");
        }
        assertEquals(List.of(ComparePhase.GETS_1, ComparePhase.GETS_2), ComparePhase.parse("gets"));
        assertEquals(2, ComparePhase.GETS_2.writers(1));
    }

    @Test
    void everySystemWithCheckpointsHasCheckpointedItsPreloadBeforeTheGetsAreTimed(@TempDir Path tmp) throws Exception {
        // Ignite's settle did nothing: the checkpoint of its preloaded pages ran beside its timed gets (Varve's ran before).
        // Ignite wants its --add-opens flags, which the harness's child JVMs have and this one does not: a real run. Without
        // the write phases' warm-up (rounds of puts on stores of their own, closed before the preload): it has no part in
        // when the preload's pages are checkpointed, and took about half of each child JVM's time here
        Path out = tmp.resolve("o");
        Main.run(new String[] {"--compare", "--systems", "varve_rf_snappy,ignite_wal_physical", "--phases", "gets_1", "--keys", "20000",
                        "--seconds", "1", "--warmup-seconds", "0", "--dir", tmp.resolve("d").toString(), "--out", out.toString()},
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8), new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
        for (CompareSetup setup : List.of(CompareSetup.VARVE_RF_SNAPPY, CompareSetup.IGNITE_WAL_PHYSICAL)) {
            PhaseResult r = PhaseResult.read(out.resolve("data").resolve("log_only-" + setup.name().toLowerCase(Locale.ROOT) + ".txt"), setup,
                    WalSyncMode.LOG_ONLY, List.of(ComparePhase.GETS_1), null).get(0);
            assertNull(r.error(), setup + ": " + r.error());
            assertEquals(0L, r.get("cpPages"), setup + ": a checkpoint wrote pages while the gets were timed");
        }
    }

    @Test
    void aGetThatReturnsAnotherValueFailsThePhase(@TempDir Path tmp) {
        try (PeerTarget target = CompareChild.open(CompareSetup.VARVE_RF_SNAPPY, settings(), tmp, false)) {
            CompareChild.preload(target, KEYS);
            byte[] expected = new byte[ComparePhase.GET_VALUE_BYTES];
            CompareChild.get(target, 7, expected); // as put
            target.put(7, Values.of(8, ComparePhase.GET_VALUE_BYTES));
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> CompareChild.get(target, 7, expected));
            assertTrue(e.getMessage().contains("id 7"), e.getMessage());
            target.put(7, new byte[0]);
            assertThrows(IllegalStateException.class, () -> CompareChild.get(target, 7, expected));
        }
    }
}
