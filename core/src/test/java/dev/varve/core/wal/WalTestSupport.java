package dev.varve.core.wal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.stream.Stream;

/** Helpers shared by the WAL tests: seeded randomness, reading everything back, raw byte surgery on segments. */
final class WalTestSupport {
    static final long SEGMENT_SIZE = 64 * 1024;

    private WalTestSupport() {
    }

    /** A record as read back, payload copied out of the reader's view. */
    record Rec(long lsn, int type, byte[] payload, long nextLsn) {
    }

    /** A seed from -Dvarve.seed or fresh, printed so a failing run can be repeated. */
    static Random seeded(String test) {
        long seed = Long.getLong("varve.seed", System.nanoTime());
        System.out.println(test + " seed: " + seed + " (rerun with -Dvarve.seed=" + seed + ")");
        return new Random(seed);
    }

    static byte[] randomBytes(Random rnd, int size) {
        byte[] b = new byte[size];
        rnd.nextBytes(b);
        return b;
    }

    static List<Rec> readAll(Wal wal, long fromLsn) {
        List<Rec> out = new ArrayList<>();
        try (WalReader r = wal.read(fromLsn)) {
            while (r.next()) {
                ByteBuffer p = r.payload();
                byte[] bytes = new byte[p.remaining()];
                p.get(bytes);
                out.add(new Rec(r.lsn(), r.type(), bytes, r.nextLsn()));
            }
        }
        return out;
    }

    static Path segmentFile(Path dir, long index) {
        return dir.resolve(WalSegmentDescriptor.fileName(index));
    }

    /** Overwrites bytes of a segment file at {@code offset}, bypassing the WAL. */
    static void overwrite(Path file, long offset, byte[] bytes) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(bytes), offset);
        }
    }

    static byte[] readBytes(Path file, long offset, int length) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(length);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            while (b.hasRemaining() && ch.read(b, offset + b.position()) >= 0) {
                // keep reading
            }
        }
        return b.array();
    }

    /** Flips all bits of the byte at {@code offset}. */
    static void flipByte(Path file, long offset) throws IOException {
        byte[] b = readBytes(file, offset, 1);
        b[0] ^= (byte) 0xFF;
        overwrite(file, offset, b);
    }

    /** Every file in {@code dir} with its bytes. */
    static Map<Path, byte[]> snapshotFiles(Path dir) throws IOException {
        Map<Path, byte[]> files = new TreeMap<>();
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p : (Iterable<Path>) s::iterator) files.put(p, Files.readAllBytes(p));
        }
        return files;
    }

    /** Asserts two {@link #snapshotFiles} results are the same files with the same bytes. */
    static void assertSameFiles(Map<Path, byte[]> before, Map<Path, byte[]> after) {
        assertEquals(before.keySet(), after.keySet(), "the same files");
        for (Map.Entry<Path, byte[]> e : before.entrySet()) {
            assertArrayEquals(e.getValue(), after.get(e.getKey()), e.getKey() + " unchanged");
        }
    }
}
