package dev.varve.cli;

import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code info}'s page-file and WAL figures count the store's files: they counted every regular file in {@code pages/}
 * and {@code wal/}, so an editor's swap file, a .DS_Store or an operator's copy of a segment made them wrong.
 */
@Timeout(60)
class CliInfoStrayFilesTest {
    @TempDir
    Path dir;

    @Test
    void infoCountsTheStoresFilesOnly() throws IOException {
        Path store = dir.resolve("s");
        try (Varve s = Varve.open(SmallStore.fresh(store).build())) {
            s.table("t").put("k".getBytes(StandardCharsets.UTF_8), "v".getBytes(StandardCharsets.UTF_8));
        }
        long pageFiles = count(store.resolve("pages"));
        long pageBytes = bytes(store.resolve("pages"));
        long walBytes = bytes(store.resolve("wal"));
        Files.writeString(store.resolve("pages/.DS_Store"), "x");
        Files.writeString(store.resolve("pages/.t00001-p00000.page.swp"), "x");
        Files.copy(store.resolve("wal/wal-0000000000000000.seg"), store.resolve("wal/wal-0000000000000000.seg.bak"));
        Files.writeString(store.resolve("wal/README"), "x");
        CliRun r = CliRun.of("info", store.toString(), "--json");
        assertEquals(Main.OK, r.code(), r.toString());
        assertTrue(r.out().contains("\"pageFiles\":{\"files\":" + pageFiles + ",\"bytes\":" + pageBytes + "}"), r.out());
        assertTrue(r.out().contains("\"wal\":{\"files\":1,\"bytes\":" + walBytes + ","), r.out());
    }

    private static long count(Path d) throws IOException {
        try (Stream<Path> s = Files.list(d)) {
            return s.count();
        }
    }

    private static long bytes(Path d) throws IOException {
        try (Stream<Path> s = Files.list(d)) {
            return s.mapToLong(p -> p.toFile().length()).sum();
        }
    }
}
