package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;

import org.junit.jupiter.api.function.Executable;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Shared helpers of the foundation acceptance tests: configs, deterministic data, models, on-disk file surgery. */
final class FixtureSupport {
    private FixtureSupport() {
    }

    /** A small store: 8 MiB region, 4 MiB WAL segments, 1 MiB checkpoint buffer, no timed checkpoint. */
    static VarveConfig.Builder small(Path dir) {
        return VarveConfig.builder().path(dir).pageSize(4096).dataRegionSize(8L << 20).partitions(4)
                .walSyncMode(WalSyncMode.LOG_ONLY).walSegmentSize(4L << 20).checkpointBufferSize(1L << 20)
                .checkpointFrequency(java.time.Duration.ofDays(1));
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Deterministic pseudo-random bytes from a seed (xorshift64*). */
    static byte[] bytes(long seed, int length) {
        byte[] b = new byte[length];
        long x = seed * 0x9E3779B97F4A7C15L + 0x632BE59BD9B4E019L;
        if (x == 0) x = 1;
        for (int i = 0; i < length; ) {
            x ^= x >>> 12;
            x ^= x << 25;
            x ^= x >>> 27;
            long r = x * 0x2545F4914F6CDD1DL;
            for (int j = 0; j < 8 && i < length; j++, r >>>= 8) b[i++] = (byte) r;
        }
        return b;
    }

    static TreeMap<byte[], byte[]> newModel() {
        return new TreeMap<>(Arrays::compareUnsigned);
    }

    /** Everything a cursor yields, checking strictly ascending unsigned key order. */
    static TreeMap<byte[], byte[]> drain(Cursor c) {
        TreeMap<byte[], byte[]> out = newModel();
        try (c) {
            byte[] prev = null;
            while (c.next()) {
                byte[] k = c.key();
                if (prev != null) assertTrue(Arrays.compareUnsigned(prev, k) < 0, "scan out of order");
                out.put(k, c.value());
                prev = k;
            }
        }
        return out;
    }

    /** Asserts two maps hold the same keys and values, naming the first difference. */
    static void assertSameContent(TreeMap<byte[], byte[]> expected, TreeMap<byte[], byte[]> actual, String what) {
        if (expected.size() != actual.size() || !expected.keySet().equals(actual.keySet())) {
            for (byte[] k : expected.keySet()) assertTrue(actual.containsKey(k), what + ": missing key " + show(k));
            for (byte[] k : actual.keySet()) assertTrue(expected.containsKey(k), what + ": unexpected key " + show(k));
        }
        assertEquals(expected.size(), actual.size(), what + ": size");
        for (var e : expected.entrySet()) assertArrayEquals(e.getValue(), actual.get(e.getKey()), what + ": value of " + show(e.getKey()));
    }

    /** Checks every key of the model through get(), and a full scan of the table, against the model. */
    static void assertTableHolds(Table t, TreeMap<byte[], byte[]> model, String what) {
        for (var e : model.entrySet()) assertArrayEquals(e.getValue(), t.get(e.getKey()), what + ": get " + show(e.getKey()));
        assertSameContent(model, drain(t.scan(null, null)), what + ": scan");
    }

    /** The rank of snapshot {@code id} among the live snapshots of {@code s}: one element, none once it is dropped. */
    static List<Integer> ranksOf(Varve s, long id) {
        return s.snapshots().stream().filter(i -> i.id() == id).map(SnapshotInfo::rank).toList();
    }

    /** When live snapshot {@code id} of {@code s} was declared (epoch milliseconds). */
    static long declaredMillis(Varve s, long id) {
        return s.snapshots().stream().filter(i -> i.id() == id).findFirst().orElseThrow().declared().toEpochMilli();
    }

    /** Waits (bounded by the caller's timeout) until a snapshot declared at {@code declared} is older than {@code age}. */
    static void awaitOlderThan(long declared, Duration age) throws InterruptedException {
        while (System.currentTimeMillis() <= declared + age.toMillis()) Thread.sleep(10);
    }

    static String show(byte[] k) {
        String s = new String(k, StandardCharsets.UTF_8);
        return s.chars().allMatch(ch -> ch >= 32 && ch < 127) ? "'" + s + "'" : Arrays.toString(k);
    }

    // ---------------------------------------------------------------- files

    /** The page files of the store, sorted by name. */
    static List<Path> pageFiles(Path store) throws IOException {
        try (Stream<Path> s = Files.list(store.resolve("pages"))) {
            return s.filter(p -> p.getFileName().toString().endsWith(".page")).sorted().collect(Collectors.toList());
        }
    }

    /** The page file of partition {@code p} of table id {@code tableId} (user tables count from 1). */
    static Path pageFile(Path store, int tableId, int p) {
        return store.resolve("pages").resolve(String.format("t%05d-p%05d.page", tableId, p));
    }

    /** The WAL segment files, sorted by name (= by index). */
    static List<Path> walSegments(Path store) throws IOException {
        try (Stream<Path> s = Files.list(store.resolve("wal"))) {
            return s.filter(p -> p.getFileName().toString().matches("wal-\\d+\\.seg")).sorted().collect(Collectors.toList());
        }
    }

    /** One record's position in a segment file. */
    record WalRecord(Path file, int offset, int length, int type) {
    }

    /**
     * Every record of every WAL segment, oldest first (records are 8-aligned after a 40-byte header; length 0 ends), in
     * the file open reads them from: a segment's durable copy when it holds more records than the segment file (after
     * a power loss took the mapped file's unforced pages), else the segment file.
     */
    static List<WalRecord> walRecords(Path store) throws IOException {
        List<WalRecord> out = new ArrayList<>();
        for (Path f : walSegments(store)) {
            List<WalRecord> inFile = recordsIn(f);
            Path copy = f.resolveSibling(f.getFileName() + ".durable");
            List<WalRecord> inCopy = Files.exists(copy) ? recordsIn(copy) : List.of();
            out.addAll(inCopy.size() > inFile.size() ? inCopy : inFile);
        }
        return out;
    }

    private static List<WalRecord> recordsIn(Path f) throws IOException {
        List<WalRecord> out = new ArrayList<>();
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(f)).order(ByteOrder.LITTLE_ENDIAN);
        int off = 40;
        while (off + 17 <= b.capacity()) {
            int len = b.getInt(off);
            if (len <= 0) break;
            out.add(new WalRecord(f, off, len, b.get(off + 16) & 0xFF));
            off += (len + 7) & ~7;
        }
        return out;
    }

    /**
     * Flips a byte {@code at} bytes into WAL record {@code r}, in its file and in the other file holding the same
     * record — the segment file and its durable copy, which open would otherwise read the record from, whole.
     */
    static void flipWalRecordByte(WalRecord r, int at) throws IOException {
        flipByte(r.file(), r.offset() + at);
        String name = r.file().getFileName().toString();
        Path twin = name.endsWith(".durable") ? r.file().resolveSibling(name.substring(0, name.length() - ".durable".length()))
                : r.file().resolveSibling(name + ".durable");
        if (Files.exists(twin) && recordsIn(twin).stream().anyMatch(o -> o.offset() == r.offset() && o.length() == r.length())) {
            flipByte(twin, r.offset() + at);
        }
    }

    /** The last record of the newest WAL segment. */
    static WalRecord lastWalRecord(Path store) throws IOException {
        List<WalRecord> all = walRecords(store);
        if (all.isEmpty()) throw new AssertionError("no WAL record found in " + walSegments(store));
        return all.get(all.size() - 1);
    }

    /** Every file under {@code dir} with its bytes: to show that a refused open changed nothing. */
    static Map<Path, byte[]> filesUnder(Path dir) throws IOException {
        Map<Path, byte[]> files = new TreeMap<>();
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : (Iterable<Path>) s.filter(Files::isRegularFile)::iterator) {
                if (!p.getFileName().toString().equals("varve.lock")) files.put(dir.relativize(p), Files.readAllBytes(p));
            }
        }
        return files;
    }

    /** Asserts two {@link #filesUnder} results hold the same files with the same bytes. */
    static void assertSameFiles(Map<Path, byte[]> before, Map<Path, byte[]> after) {
        assertEquals(before.keySet(), after.keySet(), "the same files");
        for (Map.Entry<Path, byte[]> e : before.entrySet()) {
            assertArrayEquals(e.getValue(), after.get(e.getKey()), e.getKey() + " unchanged");
        }
    }

    /** Overwrites {@code length} bytes at {@code offset} with zeros (a write that never reached the disk). */
    static void zero(Path file, long offset, int length) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ByteBuffer z = ByteBuffer.allocate(length);
            while (z.hasRemaining()) ch.write(z, offset + z.position());
            ch.force(false);
        }
    }

    /** Flips bits of one byte at {@code offset}. */
    static void flipByte(Path file, long offset) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer one = ByteBuffer.allocate(1);
            if (ch.read(one, offset) != 1) throw new AssertionError("no byte at " + offset + " in " + file);
            one.put(0, (byte) (one.get(0) ^ 0x5A)).rewind();
            ch.write(one, offset);
            ch.force(false);
        }
    }

    // ---------------------------------------------------------------- self-validating values

    /**
     * A value that proves where it came from: key, writer, sequence, payload, and a CRC32C over all of it. Any torn,
     * mixed or misplaced value fails {@link #check}.
     */
    static byte[] stamped(byte[] key, int writer, long seq, int payloadLength) {
        ByteBuffer b = ByteBuffer.allocate(4 + key.length + 4 + 8 + 4 + payloadLength + 4);
        b.putInt(key.length).put(key).putInt(writer).putLong(seq).putInt(payloadLength).put(bytes(writer * 1_000_003L + seq, payloadLength));
        CRC32C crc = new CRC32C();
        crc.update(b.array(), 0, b.position());
        b.putInt((int) crc.getValue());
        return b.array();
    }

    /** Writer and sequence of a stamped value, after checking it belongs to {@code key} and is whole. */
    static long[] check(byte[] key, byte[] value) {
        if (value.length < 24) throw new AssertionError("value of " + show(key) + " too short to be stamped: " + value.length);
        CRC32C crc = new CRC32C();
        crc.update(value, 0, value.length - 4);
        ByteBuffer b = ByteBuffer.wrap(value);
        if (b.getInt(value.length - 4) != (int) crc.getValue()) throw new AssertionError("torn or corrupt value under " + show(key));
        int kl = b.getInt();
        byte[] k = new byte[kl];
        b.get(k);
        if (!Arrays.equals(k, key)) throw new AssertionError("value of " + show(k) + " found under key " + show(key));
        int writer = b.getInt();
        long seq = b.getLong();
        int pl = b.getInt();
        if (pl != value.length - 4 - kl - 4 - 8 - 4 - 4) throw new AssertionError("bad payload length under " + show(key));
        return new long[]{writer, seq};
    }

    /**
     * Runs a call that must be rejected: it throws {@code type} naming each of {@code mustMention}, and neither logs,
     * counts a write nor declares a snapshot.
     */
    static <T extends Throwable> T rejected(Varve store, Class<T> type, Executable call, String... mustMention) {
        long wal = store.metrics().walBytesWritten();
        long writes = store.metrics().writes();
        int snapshots = store.snapshots().size();
        T e = assertThrows(type, call);
        for (String s : mustMention) assertTrue(e.getMessage() != null && e.getMessage().contains(s), "message mentions '" + s + "': " + e.getMessage());
        assertEquals(wal, store.metrics().walBytesWritten(), "a rejected call logged something: " + e);
        assertEquals(writes, store.metrics().writes(), "a rejected call counted a write");
        assertEquals(snapshots, store.snapshots().size(), "a rejected call declared a snapshot");
        return e;
    }
}
