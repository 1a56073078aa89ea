// Client quotas through Kafka's own Admin client, for kafka_dr.kafka.client_quotas.
//
// confluent-kafka has no client-quota calls, so this one file runs with `java ClientQuotas.java`
// (Java's single-file launch: nothing is built) on the Kafka client jars.
// stdin: sections ended by a line "---": one cluster's client properties per section, then
// (alter, one cluster) one alteration per line:
//   SET<TAB>entity<TAB>key<TAB>value  or  DELETE<TAB>entity<TAB>key
// An entity is "type=name" pairs joined by "&", names percent-encoded; a type without "=" is
// that type's default entity. `describe` asks every cluster at once (one JVM for all: its
// start is most of a call's cost) and prints "cluster<TAB>entity<TAB>key<TAB>value" lines,
// cluster being the section's index. Secrets arrive on stdin only. A refused or timed-out call
// prints one line "cluster<TAB>ErrorClass: message", exit 3.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.StringReader;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;

public class ClientQuotas {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<StringBuilder> sections = new ArrayList<>();
        sections.add(new StringBuilder());
        for (String line; (line = in.readLine()) != null; ) {
            if (line.equals("---")) {
                sections.add(new StringBuilder());
            } else {
                sections.get(sections.size() - 1).append(line).append('\n');
            }
        }
        String rest = sections.remove(sections.size() - 1).toString(); // after the last "---": the alterations
        List<Admin> admins = new ArrayList<>();
        int cluster = 0;
        try {
            for (StringBuilder props : sections) {
                Properties conf = new Properties();
                conf.load(new StringReader(props.toString()));
                admins.add(Admin.create(conf));
            }
            if (args.length == 1 && args[0].equals("describe")) {
                List<KafkaFuture<Map<ClientQuotaEntity, Map<String, Double>>>> asked = new ArrayList<>();
                for (Admin admin : admins) asked.add(admin.describeClientQuotas(ClientQuotaFilter.all()).entities());
                for (cluster = 0; cluster < asked.size(); cluster++) {
                    print(cluster, asked.get(cluster).get(30, TimeUnit.SECONDS));
                }
            } else if (args.length == 1 && args[0].equals("alter") && admins.size() == 1) {
                alter(admins.get(0), rest);
            } else {
                System.err.println("usage: ClientQuotas describe|alter (alter: one cluster)");
                System.exit(2);
            }
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            System.err.println(cluster + "\t" + c.getClass().getSimpleName() + ": " + c.getMessage());
            System.exit(3);
        } catch (TimeoutException e) {
            System.err.println(cluster + "\tTimeoutException: no answer within 30 s");
            System.exit(3);
        } finally {
            for (Admin admin : admins) admin.close();
        }
    }

    static void print(int cluster, Map<ClientQuotaEntity, Map<String, Double>> all) {
        for (Map.Entry<ClientQuotaEntity, Map<String, Double>> e : all.entrySet()) {
            String entity = encode(e.getKey());
            for (Map.Entry<String, Double> q : new TreeMap<>(e.getValue()).entrySet()) {
                System.out.println(cluster + "\t" + entity + "\t" + q.getKey() + "\t" + q.getValue());
            }
        }
    }

    static void alter(Admin admin, String text) throws Exception {
        List<String> lines = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (!line.isEmpty()) lines.add(line);
        }
        Map<String, List<ClientQuotaAlteration.Op>> byEntity = new LinkedHashMap<>();
        for (String line : lines) {
            String[] f = line.split("\t", -1);
            Double value = f[0].equals("SET") ? Double.valueOf(f[3]) : null;
            byEntity.computeIfAbsent(f[1], k -> new ArrayList<>()).add(new ClientQuotaAlteration.Op(f[2], value));
        }
        List<ClientQuotaAlteration> alterations = new ArrayList<>();
        for (Map.Entry<String, List<ClientQuotaAlteration.Op>> e : byEntity.entrySet()) {
            alterations.add(new ClientQuotaAlteration(decode(e.getKey()), e.getValue()));
        }
        admin.alterClientQuotas(alterations).all().get(30, TimeUnit.SECONDS);
        System.out.println("altered " + alterations.size());
    }

    static String encode(ClientQuotaEntity entity) {
        StringBuilder out = new StringBuilder();
        for (Map.Entry<String, String> p : new TreeMap<>(entity.entries()).entrySet()) {
            if (out.length() > 0) out.append('&');
            out.append(p.getKey());
            if (p.getValue() != null) out.append('=').append(URLEncoder.encode(p.getValue(), StandardCharsets.UTF_8));
        }
        return out.toString();
    }

    static ClientQuotaEntity decode(String text) {
        Map<String, String> entries = new HashMap<>();
        for (String part : text.split("&")) {
            int eq = part.indexOf('=');
            if (eq < 0) {
                entries.put(part, null);
            } else {
                entries.put(part.substring(0, eq), URLDecoder.decode(part.substring(eq + 1), StandardCharsets.UTF_8));
            }
        }
        return new ClientQuotaEntity(entries);
    }
}
