package dev.varve.snapshot;

import dev.varve.core.io.FileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** The counts reclamation keeps of the level-1 Maplog part it deletes: read back as written; damage costs the counts only. */
class CaptureCountsFileTest {
    @TempDir
    Path dir;

    @Test
    void readsBackWhatItWrote() {
        Map<Long, Long> counts = new TreeMap<>(Map.of(3L, 4160L, 9L, 120L));
        long[] packs = {-1, 7, -1};
        long[] inPacks = {0, 9, 0};
        CaptureCountsFile.write(FileIOFactory.standard(), dir, new CaptureCountsFile.Saved(4096, counts, packs, inPacks));
        CaptureCountsFile.Saved read = CaptureCountsFile.read(FileIOFactory.standard(), dir, 2);
        assertEquals(4096, read.position());
        assertEquals(counts, read.counts());
        assertArrayEquals(packs, read.lastPack());
        assertArrayEquals(inPacks, read.lastInPack());
    }

    @Test
    void aDamagedOrMissingFileCountsNothing() throws Exception {
        assertEquals(0, CaptureCountsFile.read(FileIOFactory.standard(), dir, 2).position());
        CaptureCountsFile.write(FileIOFactory.standard(), dir, new CaptureCountsFile.Saved(4096, Map.of(3L, 4160L), new long[]{-1, -1, -1}, new long[3]));
        Path file = dir.resolve(CaptureCountsFile.FILE);
        byte[] bytes = Files.readAllBytes(file);
        bytes[20] ^= 1; // in the position
        Files.write(file, bytes);
        CaptureCountsFile.Saved read = CaptureCountsFile.read(FileIOFactory.standard(), dir, 2);
        assertEquals(0, read.position());
        assertEquals(Map.of(), read.counts());
    }
}
