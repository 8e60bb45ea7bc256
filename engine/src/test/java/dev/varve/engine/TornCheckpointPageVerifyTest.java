package dev.varve.engine;

import dev.varve.core.io.UnforcedFileIOFactory;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FaultyFileIOFactory;
import dev.varve.core.io.FaultyFileIOFactory.Kind;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A power cut in the middle of a checkpoint's page writes leaves a torn page in a page file, which open puts back
 * from that checkpoint's recovery data (its recovery files, or the physical WAL records since the mark before) and
 * never reads. {@code verify} judges the store as open does: no damage, the torn page listed as restored by open —
 * where it reported the torn page as damage in a store that opens and reads every acknowledged write.
 */
@Timeout(300)
class TornCheckpointPageVerifyTest {
    private static final int KEYS = 3_000;

    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    void aPageTornByAPowerCutInACheckpointIsRestoredNotDamage(RecoveryMode mode) throws IOException {
        VarveConfig config = VarveConfig.builder().path(dir).recoveryMode(mode).walSyncMode(WalSyncMode.FSYNC).dataRegionSize(32L << 20)
                .checkpointBufferSize(4L << 20).walSegmentSize(8L << 20).checkpointFrequency(Duration.ofDays(1)).captureBufferSize(1L << 20).build();
        FaultyFileIOFactory io = new FaultyFileIOFactory(41 + mode.ordinal());
        Map<String, String> model = new TreeMap<>();
        Varve store = Varve.open(config, io);
        for (int round = 0; round < 2; round++) {
            for (int k = 0; k < KEYS; k++) {
                String key = String.format("key-%05d", k);
                String value = "round " + round + " of " + key + " " + "v".repeat(40 + (k * 7 + round * 13) % 80);
                store.table("t").put(bytes(key), bytes(value));
                model.put(key, value);
            }
            if (round == 0) store.checkpoint().join();
        }
        // the power goes in the second checkpoint's fifth page write, which lands torn (its recovery data is durable by then)
        io.powerCutAt(FaultyFileIOFactory.nth(5, op -> op.kind() == Kind.WRITE && op.path().toString().contains("/pages/")));
        try {
            store.checkpoint().join();
        } catch (RuntimeException expected) {
            // the "process" died in the checkpoint
        }
        assertNotNull(io.crashedAt(), "the crash point was reached");
        store.halt();
        io.powerLoss();

        // the page files hold a torn page: the plain file check finds it
        StoreInspector.FileCheck plain = StoreInspector.checkFiles(config);
        assertTrue(plain.damage().stream().anyMatch(d -> d.file().toString().contains("/pages/")), "no torn page on disk: " + plain.damage());

        Map<Path, byte[]> before = FixtureSupport.filesUnder(dir);
        StoreVerifier.Report report = StoreVerifier.verify(config);
        FixtureSupport.assertSameFiles(before, FixtureSupport.filesUnder(dir)); // verify changed no file
        assertNull(report.unusable(), mode + ": " + report.unusable());
        assertTrue(report.damage().isEmpty(), mode + ": verify reports damage: " + report.damage());
        assertFalse(report.files().pagesRestored().isEmpty(), mode + ": the torn pages are not listed as restored");
        assertEquals(plain.damage().size(), report.files().pagesRestored().size(), mode + ": " + plain.damage() + " vs " + report.files().pagesRestored());

        try (Varve v = Varve.open(config, UnforcedFileIOFactory.INSTANCE)) { // and open agrees: every acknowledged write reads back
            for (Map.Entry<String, String> e : model.entrySet())
                assertEquals(e.getValue(), new String(v.table("t").get(bytes(e.getKey())), StandardCharsets.UTF_8), mode + " " + e.getKey());
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
