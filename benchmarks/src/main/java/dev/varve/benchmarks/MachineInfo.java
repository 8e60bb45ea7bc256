package dev.varve.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** The machine a comparison ran on, for the report: CPU, cores, memory, OS, JVM, file system, load. */
record MachineInfo(String cpu, int cores, long memoryBytes, String os, String jvm, String fileSystem, String loadAverage) {

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
                System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version"), fs, currentLoadAverage());
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
        return String.format("%d cores (%s), %,d GiB RAM, %s, %s, store file system %s, load average %s", cores, cpu,
                Math.round(memoryBytes / 1073741824.0), os, jvm, fileSystem, loadAverage);
    }
}
