package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * A store records the retention policy it was last opened for writing with, so that those that open it without its
 * configuration — the tool, through {@link StoreInspector#detectConfig} — apply its rules: after a crash, replay
 * re-decides the drops made since the last checkpoint, and with keep-everything defaults a read-only open called
 * snapshots the store had dropped live (from a black-box review: 142 live where the policy keeps about 24).
 */
@Timeout(120)
class RecordedRetentionTest {
    @TempDir
    Path dir;

    private VarveConfig config(RankTreePolicy policy) {
        return VarveConfig.builder().path(dir).dataRegionSize(16L << 20).partitions(2).checkpointFrequency(Duration.ofHours(1)).retention(policy)
                .checkpointBufferSize(4L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).build();
    }

    private static List<Long> ids(Varve store) {
        List<Long> ids = new ArrayList<>();
        for (SnapshotInfo s : store.snapshots()) ids.add(s.id());
        return ids;
    }

    @Test
    void aStoreOpenedWithoutItsConfigurationAppliesTheRecordedPolicy() {
        RankTreePolicy keep4 = RankTreePolicy.levels(Retention.keepLast(4));
        Varve store = Varve.open(config(keep4));
        for (int i = 0; i < 80; i++) {
            byte[] key = ("k" + i % 7).getBytes(StandardCharsets.UTF_8);
            store.writeAndSnapshot(b -> b.put("t", key, new byte[16]));
            if (i == 40) store.checkpoint().join(); // the drops after it are replay's to decide again
        }
        List<Long> live = ids(store);
        assertEquals(List.of(77L, 78L, 79L, 80L), live);
        store.halt();
        assertEquals(Optional.of(keep4), StoreInspector.recordedRetention(dir.resolve("archive")));
        VarveConfig detected = StoreInspector.detectConfig(dir);
        assertEquals(keep4, detected.retention());
        try (Varve ro = Varve.openReadOnly(detected)) {
            assertEquals(live, ids(ro), "the snapshots the store kept, not every one replayed");
        }
        RankTreePolicy keep8 = RankTreePolicy.levels(Retention.keepLast(8));
        try (Varve reopened = Varve.open(config(keep8))) { // replay decides the drops since the checkpoint by this policy
            assertEquals(List.of(73L, 74L, 75L, 76L, 77L, 78L, 79L, 80L), ids(reopened));
        }
        assertEquals(keep8, StoreInspector.detectConfig(dir).retention(), "the policy of the last writable open");
    }

    @Test
    void aDamagedPolicyFileIsNamedByVerifyIgnoredByTheToolAndReplacedByAWritableOpen() throws java.io.IOException {
        RankTreePolicy keep4 = RankTreePolicy.levels(Retention.keepLast(4));
        try (Varve store = Varve.open(config(keep4))) {
            store.writeAndSnapshot(b -> b.put("t", new byte[]{1}, new byte[]{2}));
        }
        Path file = dir.resolve("archive").resolve("retention.policy");
        byte[] b = java.nio.file.Files.readAllBytes(file);
        b[b.length - 2] ^= 0x20; // in the rules' text
        java.nio.file.Files.write(file, b);
        StoreInspector.FileCheck check = StoreInspector.checkFiles(config(keep4));
        assertEquals(1, check.damage().size(), String.valueOf(check.damage()));
        assertEquals(file, check.damage().get(0).file());
        // the tool goes on without it (it blocked every command, verify's too): it keeps every snapshot replay would drop
        VarveConfig detected = StoreInspector.detectConfig(dir);
        assertEquals(RankTreePolicy.keepEverything(), detected.retention());
        StoreVerifier.Report report = StoreVerifier.verify(detected);
        assertTrue(report.damage().stream().anyMatch(d -> d.file().equals(file)), "verify names the file: " + report.damage());
        try (Varve store = Varve.open(config(keep4))) {
            assertEquals(1, store.snapshots().size());
        }
        assertEquals(keep4, StoreInspector.detectConfig(dir).retention());
    }
}
