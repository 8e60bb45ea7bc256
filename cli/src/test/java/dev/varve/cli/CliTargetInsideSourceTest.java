package dev.varve.cli;

import dev.varve.core.io.DirectoryFingerprint;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** backup, salvage and dump leave their source unchanged: they wrote into it when their target lay inside it. */
@Timeout(60)
class CliTargetInsideSourceTest {
    @TempDir
    Path dir;

    @Test
    void aTargetInsideTheSourceIsRefused() {
        Path store = dir.resolve("s");
        try (Varve s = Varve.open(SmallStore.fresh(store).build())) {
            s.table("t").put("k".getBytes(StandardCharsets.UTF_8), "v".getBytes(StandardCharsets.UTF_8));
        }
        Map<String, String> before = DirectoryFingerprint.of(store);
        String s = store.toString();
        for (String[] args : new String[][]{
                {"backup", s, "--to", store.resolve("wal/copy").toString()},
                {"salvage", s, "--to", store.resolve("pages/copy").toString()},
                {"dump", s, "--out", store.resolve("archive/t.dump").toString()},
                {"backup", s, "--to", store.resolve("copy").toString()}}) {
            CliRun r = CliRun.of(args);
            assertEquals(Main.USAGE, r.code(), r.toString());
            assertTrue(r.err().contains("lies inside " + store), r.toString());
            assertEquals(before, DirectoryFingerprint.of(store), String.join(" ", args));
        }
        assertEquals(Main.OK, CliRun.of("backup", s, "--to", dir.resolve("copy").toString()).code(), "a target beside it");
    }

    /** The same through a symbolic link to the store: compared as written, the paths did not overlap, and the copy went into it. */
    @Test
    void aTargetInsideTheSourceThroughALinkIsRefused() throws java.io.IOException {
        Path store = dir.resolve("s");
        try (Varve s = Varve.open(SmallStore.fresh(store).build())) {
            s.table("t").put("k".getBytes(StandardCharsets.UTF_8), "v".getBytes(StandardCharsets.UTF_8));
        }
        Path link = java.nio.file.Files.createSymbolicLink(dir.resolve("link"), store);
        Map<String, String> before = DirectoryFingerprint.of(store);
        for (String[] args : new String[][]{
                {"backup", store.toString(), "--to", link.resolve("copy").toString()},
                {"dump", link.toString(), "--out", store.resolve("archive/t.dump").toString()}}) {
            CliRun r = CliRun.of(args);
            assertEquals(Main.USAGE, r.code(), r.toString());
            assertTrue(r.err().contains("lies inside"), r.toString());
            assertEquals(before, DirectoryFingerprint.of(store), String.join(" ", args));
        }
    }
}
