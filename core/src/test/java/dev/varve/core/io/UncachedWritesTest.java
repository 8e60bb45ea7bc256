package dev.varve.core.io;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link FileIOFactory#openUncached}: where the file system offers uncached writes for an alignment, what they write
 * reads back through an ordinary handle; an alignment the file system's blocks do not divide is refused (empty), as
 * is any request to a factory that does not offer it; a missing file is an error, not a refusal.
 */
@Timeout(30)
class UncachedWritesTest {
    @TempDir
    Path dir;

    @Test
    void uncachedWritesReadBackOrAreRefused() throws IOException {
        Path file = dir.resolve("pages");
        Files.write(file, new byte[8192]);
        long block = Files.getFileStore(file).getBlockSize();
        Optional<FileIO> odd = FileIOFactory.standard().openUncached(file, (int) block + 1);
        assertTrue(odd.isEmpty(), "an alignment the blocks do not divide");
        Optional<FileIO> uncached = FileIOFactory.standard().openUncached(file, 8192);
        System.out.println("uncached writes on " + Files.getFileStore(file).type() + " (block " + block + "): " + uncached.isPresent());
        if (uncached.isPresent()) {
            ByteBuffer run = ByteBuffer.allocateDirect(3 * 8192).alignedSlice(8192);
            run.limit(8192);
            for (int i = 0; i < 8192; i++) run.put(i, (byte) (i * 7));
            try (FileIO f = uncached.get()) {
                f.write(run, 8192);
            }
            byte[] back = Files.readAllBytes(file);
            assertEquals(16384, back.length);
            for (int i = 0; i < 8192; i++) assertEquals((byte) (i * 7), back[8192 + i], "byte " + i);
        }
        assertTrue(new ForwardingFileIOFactory() { }.openUncached(file, 8192).isEmpty(),
                "a factory that does not offer it (the test seams) refuses, so their callers write through open");
        assertThrows(IOException.class, () -> FileIOFactory.standard().openUncached(dir.resolve("missing"), 8192));
    }
}
