package dev.varve.benchmarks;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.OperatingSystemMXBean;
import java.lang.management.ThreadMXBean;

/**
 * Where a phase's CPU went, read from the JVM at the edges of its measured interval: the whole process (every thread,
 * the native ones of a JNI peer such as RocksDB's compaction included), and how long the JIT compiler worked meanwhile.
 * On a machine of two cores these say why a second writer adds what it adds: whatever a system's background threads
 * and the compiler take, its writers cannot have. A figure the JVM cannot give is -1. The process's time
 * comes from the OS in clock ticks (10 ms on Linux), a thread's in nanoseconds.
 */
record CpuTimes(long processNanos, long compileMillis) {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    static CpuTimes now() {
        OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        long process = os instanceof com.sun.management.OperatingSystemMXBean sun ? sun.getProcessCpuTime() : -1;
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        long compile = jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : -1;
        return new CpuTimes(process, compile);
    }

    /** What was spent between {@code earlier} and this reading; -1 where either side could not tell. */
    CpuTimes since(CpuTimes earlier) {
        return new CpuTimes(delta(processNanos, earlier.processNanos), delta(compileMillis, earlier.compileMillis));
    }

    /** The calling thread's CPU time in nanoseconds, -1 when the JVM does not measure it. */
    static long currentThread() {
        return THREADS.isCurrentThreadCpuTimeSupported() ? THREADS.getCurrentThreadCpuTime() : -1;
    }

    private static long delta(long now, long then) {
        return now < 0 || then < 0 ? -1 : now - then;
    }
}
