package dev.varve.infinispan;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A {@link ClusterNode} in a child JVM: commands go to its stdin, answers come back from its stdout, its log goes to
 * {@code target/cluster-logs/NAME.log}. {@link #kill()} is a real kill -9 ({@link Process#destroyForcibly()}).
 */
final class NodeProcess implements AutoCloseable {
    private final String name;
    private final Process process;
    private final PrintWriter commands;
    private final BlockingQueue<String> answers = new ArrayBlockingQueue<>(16);

    private NodeProcess(String name, Process process) {
        this.name = name;
        this.process = process;
        this.commands = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) if (line.startsWith("@@")) answers.put(line);
            } catch (IOException | InterruptedException e) {
                // the process died: callers time out or see it dead
            }
        }, "answers-" + name);
        reader.setDaemon(true);
        reader.start();
    }

    /** Free loopback ports for {@code n} nodes. */
    static int[] freePorts(int n) throws IOException {
        int[] ports = new int[n];
        List<ServerSocket> held = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                held.add(s);
                ports[i] = s.getLocalPort();
            }
        } finally {
            for (ServerSocket s : held) s.close();
        }
        return ports;
    }

    /** Starts node {@code name} with its store in {@code dir}, listening on {@code port}, discovering {@code ports}. */
    static NodeProcess start(String name, Path dir, int port, int[] ports) throws IOException, InterruptedException {
        StringBuilder hosts = new StringBuilder();
        for (int p : ports) hosts.append(hosts.length() == 0 ? "" : ",").append("127.0.0.1[").append(p).append(']');
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx512m",
                "-Djava.net.preferIPv4Stack=true", "-Dvarve.test.port=" + port, "-Dvarve.test.hosts=" + hosts,
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp", System.getProperty("java.class.path"), ClusterNode.class.getName(), name, dir.toString());
        Path logs = Path.of("target", "cluster-logs");
        java.nio.file.Files.createDirectories(logs);
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.appendTo(logs.resolve(name + ".log").toFile())).start();
        NodeProcess node = new NodeProcess(name, p);
        node.await("started", 120);
        return node;
    }

    /** Sends a command and waits for its answer. */
    String ask(String command, long timeoutSeconds) throws InterruptedException {
        commands.println(command);
        return await(command, timeoutSeconds);
    }

    private String await(String what, long timeoutSeconds) throws InterruptedException {
        String a = answers.poll(timeoutSeconds, TimeUnit.SECONDS);
        if (a == null) throw new AssertionError(name + ": no answer to '" + what + "' within " + timeoutSeconds + " s (alive: " + process.isAlive() + ")");
        if (a.startsWith("@@ERR")) throw new AssertionError(name + ": '" + what + "' failed: " + a);
        return a.substring(3);
    }

    /** kill -9: no shutdown hook, nothing flushed by the JVM. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(30, TimeUnit.SECONDS)) throw new AssertionError(name + " survived kill -9");
    }

    String name() {
        return name;
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) kill();
    }
}
