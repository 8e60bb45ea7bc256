package dev.varve.benchmarks;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The machine a comparison ran on, for the report: CPU, cores, memory, OS, JVM, file system, load, and what one fsync
 * costs on the store's disk at the start (every FSYNC figure is bounded by it: a writer waiting for each put gets at
 * most one put per fsync, eight writers at most eight).
 */
record MachineInfo(String cpu, int cores, long memoryBytes, String os, String jvm, String fileSystem, String loadAverage,
                   double fsyncMicros) {
    private static final int FSYNC_PROBES = 200;

    static MachineInfo probe(Path dir) {
        String cpu = "unknown CPU";
        long mem = Runtime.getRuntime().maxMemory();
        try {
            for (String l : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (l.startsWith("model name")) {
                    cpu = l.substring(l.indexOf(':') + 1).trim();
                    break;
                }
            }
            for (String l : Files.readAllLines(Path.of("/proc/meminfo"))) {
                if (l.startsWith("MemTotal:")) {
                    mem = Long.parseLong(l.replaceAll("[^0-9]", "")) * 1024;
                    break;
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux: keep the defaults
        }
        String fs = "unknown";
        try {
            var store = Files.getFileStore(Files.exists(dir) ? dir : dir.toAbsolutePath().getParent());
            fs = store.type() + " (" + store.name() + ")";
        } catch (IOException | RuntimeException e) {
            // keep unknown
        }
        return new MachineInfo(cpu, Runtime.getRuntime().availableProcessors(), mem,
                System.getProperty("os.name") + " " + System.getProperty("os.version") + " " + System.getProperty("os.arch"),
                System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version"), fs, currentLoadAverage(),
                fsyncMicros(Files.exists(dir) ? dir : dir.toAbsolutePath().getParent()));
    }

    /** Median time of overwriting 4 KiB of a file in {@code dir} and fdatasyncing it, in µs; NaN when it cannot. */
    static double fsyncMicros(Path dir) {
        Path file = dir.resolve("fsync-probe-" + ProcessHandle.current().pid());
        long[] nanos = new long[FSYNC_PROBES];
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
                StandardOpenOption.DELETE_ON_CLOSE)) {
            ByteBuffer page = ByteBuffer.allocateDirect(4096);
            ch.write(page, 0);
            ch.force(true);
            for (int i = 0; i < nanos.length; i++) {
                long t0 = System.nanoTime();
                ch.write(page.clear(), 0);
                ch.force(false);
                nanos[i] = System.nanoTime() - t0;
            }
        } catch (IOException | RuntimeException e) {
            return Double.NaN;
        }
        Arrays.sort(nanos);
        return nanos[nanos.length / 2] / 1e3;
    }

    static String currentLoadAverage() {
        try {
            List<String> l = Files.readAllLines(Path.of("/proc/loadavg"));
            String[] f = l.get(0).split(" ");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (IOException | RuntimeException e) {
            return "unknown";
        }
    }

    String oneLine() {
        return String.format(Locale.ROOT, "%d cores (%s), %,d GiB RAM, %s, %s, store file system %s, one 4 KiB write + fdatasync "
                        + "%.0f µs, load average %s", cores, cpu, Math.round(memoryBytes / 1073741824.0), os, jvm, fileSystem,
                fsyncMicros, loadAverage);
    }
}
