package dev.varve.cli;

import dev.varve.config.*;
import dev.varve.engine.*;

import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;

/**
 * The child JVM of {@link EarlierBuildStoreTest}, run on this build's class path or on an earlier build's jar: it uses
 * the public API alone (docs/api.md), which both builds share.
 * <pre>
 *   write DIR MODE SYNC START COUNT SNAPEVERY VALLEN END   END: close, hang (to be killed), mid (killed in a checkpoint)
 *   check DIR MODE SYNC LOG...   the live view and every snapshot the logs name; exit 3 on a mismatch
 * </pre>
 * Put i writes key (i % K) = "v&lt;i&gt;|" padded to VALLEN and prints "A i" once it returned, "S id i" after a snapshot
 * declared after put i. With {@code -Dextra=1} the write also fills a second table first.
 */
public final class CrossBuildDriver {
    static final int K = 20000;

    static VarveConfig cfg(String dir, String mode, String sync) {
        return VarveConfig.builder().path(Path.of(dir)).dataRegionSize(256L << 20).partitions(4)
                .recoveryMode(RecoveryMode.valueOf(mode)).walSyncMode(WalSyncMode.valueOf(sync))
                .walSegmentSize(4L << 20).checkpointFrequency(java.time.Duration.ofHours(1))
                .checkpointWalVolume(1L << 30).build();
    }

    static byte[] key(long i) { return String.format("k%06d", i % K).getBytes(StandardCharsets.UTF_8); }

    static byte[] value(long i, int len) {
        byte[] b = new byte[Math.max(len, 12)];
        Arrays.fill(b, (byte) 'x');
        byte[] p = ("v" + i + "|").getBytes(StandardCharsets.UTF_8);
        System.arraycopy(p, 0, b, 0, p.length);
        return b;
    }

    static long indexOf(byte[] v) {
        String s = new String(v, StandardCharsets.UTF_8);
        return Long.parseLong(s.substring(1, s.indexOf('|')));
    }

    public static void main(String[] a) throws Exception {
        if (a[0].equals("write")) write(a);
        else if (a[0].equals("check")) System.exit(check(a));
        else throw new IllegalArgumentException(a[0]);
    }


    static void write(String[] a) throws Exception {
        long start = Long.parseLong(a[4]), count = Long.parseLong(a[5]);
        int snapEvery = Integer.parseInt(a[6]), len = Integer.parseInt(a[7]);
        Varve s = a[8].equals("mid") ? Varve.open(cfg(a[1], a[2], a[3]), holding()) : Varve.open(cfg(a[1], a[2], a[3]));
        System.out.println("OPENED");
        Table t = s.table("t");
        if (System.getProperty("extra") != null) for (int i = 0; i < 100; i++) s.table("u").put(key(i), value(i, 100));
        for (long i = start; i < start + count; i++) {
            t.put(key(i), value(i, len));
            System.out.println("A " + i);
            if (snapEvery > 0 && (i - start + 1) % snapEvery == 0) System.out.println("S " + s.snapshotNow() + " " + i);
        }
        switch (a[8]) {
            case "close" -> { s.close(); System.out.println("CLOSED"); }
            case "hang" -> { System.out.println("HANG"); Thread.sleep(3_600_000); }
            case "mid" -> { armed = true; s.checkpoint(); Thread.sleep(3_600_000); }
            default -> throw new IllegalArgumentException(a[8]);
        }
    }

    static volatile boolean armed;
    static final java.util.concurrent.atomic.AtomicInteger pageWrites = new java.util.concurrent.atomic.AtomicInteger();

    /** The standard files, but once armed the 200th page file write prints MID and blocks: the checkpoint is cut there. */
    static dev.varve.core.io.FileIOFactory holding() {
        dev.varve.core.io.FileIOFactory std = dev.varve.core.io.FileIOFactory.standard();
        return (dev.varve.core.io.FileIOFactory) java.lang.reflect.Proxy.newProxyInstance(CrossBuildDriver.class.getClassLoader(),
                new Class<?>[]{dev.varve.core.io.FileIOFactory.class}, (proxy, m, args) -> {
                    Object r;
                    try { r = m.invoke(std, args); } catch (java.lang.reflect.InvocationTargetException e) { throw e.getCause(); }
                    if (r instanceof dev.varve.core.io.FileIO f) return wrap(f);
                    if (r instanceof Optional<?> o && o.isPresent() && o.get() instanceof dev.varve.core.io.FileIO f) return Optional.of(wrap(f));
                    return r;
                });
    }

    static dev.varve.core.io.FileIO wrap(dev.varve.core.io.FileIO f) {
        boolean page = f.path().toString().endsWith(".page");
        return (dev.varve.core.io.FileIO) java.lang.reflect.Proxy.newProxyInstance(CrossBuildDriver.class.getClassLoader(),
                new Class<?>[]{dev.varve.core.io.FileIO.class}, (proxy, m, args) -> {
                    if (page && armed && m.getName().equals("write") && pageWrites.incrementAndGet() == 200) {
                        System.out.println("MID " + f.path());
                        Thread.sleep(3_600_000);
                    }
                    if (page && armed && m.getName().equals("write") && pageWrites.get() > 200) Thread.sleep(3_600_000);
                    try { return m.invoke(f, args); } catch (java.lang.reflect.InvocationTargetException e) { throw e.getCause(); }
                });
    }

    /** Opens the store and compares it with what the writers' logs acknowledged; 0 when it all reads back. */
    static int check(String[] a) throws Exception {
        TreeSet<Long> acked = new TreeSet<>();
        TreeSet<Long> inflight = new TreeSet<>();
        List<long[]> snaps = new ArrayList<>();
        for (int f = 4; f < a.length; f++) {
            long last = -1;
            boolean closed = false;
            for (String line : Files.readAllLines(Path.of(a[f]))) {
                String[] w = line.split(" ");
                if (w[0].equals("A")) { acked.add(Long.parseLong(w[1])); last = Long.parseLong(w[1]); }
                else if (w[0].equals("S")) snaps.add(new long[]{Long.parseLong(w[1]), Long.parseLong(w[2])});
                else if (w[0].equals("CLOSED")) closed = true;
            }
            if (!closed && last >= 0) inflight.add(last + 1);
        }
        int bad = 0;
        try (Varve s = Varve.open(cfg(a[1], a[2], a[3]))) {
            System.out.println("recovery: " + s.recoveryReport());
            bad += compare("live", s.table("t")::get, acked, inflight, Long.MAX_VALUE);
            Set<Long> live = new HashSet<>();
            for (SnapshotInfo i : s.snapshots()) live.add(i.id());
            for (long[] sn : snaps) {
                if (!live.contains(sn[0])) { System.out.println("FAIL snapshot " + sn[0] + " missing"); bad++; continue; }
                try (SnapshotView v = s.asOf(sn[0])) {
                    bad += compare("snapshot " + sn[0], v.table("t")::get, acked, inflight, sn[1]);
                }
            }
            System.out.println("checked keys=" + K + " acked=" + acked.size() + " snapshots=" + snaps.size() + " bad=" + bad);
        }
        return bad == 0 ? 0 : 3;
    }

    interface Getter { byte[] get(byte[] k); }

    /** Mismatches of {@code g} against the latest acknowledged put of each key up to {@code upTo} (or an unacknowledged later one). */
    static int compare(String what, Getter g, TreeSet<Long> acked, TreeSet<Long> inflight, long upTo) {
        long[] expect = new long[K];
        Arrays.fill(expect, -1);
        for (long i : acked) if (i <= upTo) expect[(int) (i % K)] = i;
        int bad = 0;
        for (int j = 0; j < K; j++) {
            byte[] v = g.get(key(j));
            long got = v == null ? -1 : indexOf(v);
            boolean ok = got == expect[j] || (got > expect[j] && got % K == j && got <= upTo && inflight.contains(got));
            if (!ok && bad++ < 5) System.out.println("FAIL " + what + " key " + j + " expected " + expect[j] + " got " + got);
        }
        return bad;
    }
}
