package dev.varve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.DirectoryFingerprint;
import dev.varve.engine.Varve;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The tools on a store a crash left in the middle of a compaction — an old drop log part beside the new one, a
 * snapshot log rewrite's temp file: verify, info and snapshots succeed and change no file, and the next open leaves
 * one drop log part (from a black-box review of the compaction).
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class CliCompactedStoreTest {
    @TempDir
    Path tmp;

    static CliRun unchanged(Path dir, String... args) {
        Map<String, String> before = DirectoryFingerprint.of(dir);
        CliRun r = CliRun.of(args);
        assertEquals(before, DirectoryFingerprint.of(dir), "the directory changed: " + r);
        return r;
    }

    static void steps(Varve store, int from, int to) {
        for (int i = from; i < to; i++) {
            byte[] key = ("k" + i % 100).getBytes(StandardCharsets.UTF_8);
            store.writeAndSnapshot(b -> b.put("t", key, new byte[8]));
            if (i % 1000 == 999) store.checkpoint().join();
        }
    }

    /** A store whose drop log compaction a crash cut between the new part's rename and the old part's deletion, and a snapshot log compaction cut before its rename. */
    @Test
    void toolsOnAStoreCutMidCompaction() throws IOException {
        Path dir = tmp.resolve("s");
        VarveConfig config = SmallStore.fresh(dir).retention(RankTreePolicy.levels(Retention.keepLast(4))).build();
        try (Varve store = Varve.open(config)) {
            steps(store, 0, 8_100);
        }
        Path archive = dir.resolve("archive");
        List<String> names;
        try (Stream<Path> s = Files.list(archive)) {
            names = s.map(p -> p.getFileName().toString()).sorted().toList();
        }
        Path saved = tmp.resolve("drops.log.saved");
        Files.copy(archive.resolve("drops.log"), saved); // the old part, before the compaction at the next checkpoint
        try (Varve store = Varve.open(config)) {
            steps(store, 8_100, 9_200);
        }
        try (Stream<Path> s = Files.list(archive)) {
            names = s.map(p -> p.getFileName().toString()).sorted().toList();
        }
        assertTrue(names.stream().anyMatch(n -> n.startsWith("drops.log.")), names.toString());
        Files.copy(saved, archive.resolve("drops.log"), StandardCopyOption.REPLACE_EXISTING); // beside the newer part
        Files.write(archive.resolve("snapshots.log.creating"), new byte[100]); // a snapshot log rewrite cut before its rename
        for (String cmd : new String[]{"verify", "info", "snapshots"}) {
            CliRun r = unchanged(dir, cmd, "--json", dir.toString());
            assertEquals(0, r.code(), cmd + ": " + r);
        }
        try (Varve ro = Varve.openReadOnly(config)) {
            assertEquals(4, ro.snapshots().size());
        }
        try (Varve store = Varve.open(config)) {
            assertEquals(4, store.snapshots().size());
        }
        try (Stream<Path> s = Files.list(archive)) {
            names = s.map(p -> p.getFileName().toString()).sorted().toList();
        }
        assertEquals(1, names.stream().filter(n -> n.startsWith("drops.log")).count(), names.toString());
        CliRun r = unchanged(dir, "verify", "--json", dir.toString());
        assertEquals(0, r.code(), r.toString());
    }
}
