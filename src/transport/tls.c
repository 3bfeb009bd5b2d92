/*
 * HTTPS credentials: see tls.h. GnuTLS reads the PEM; this file bounds the
 * input, checks what GnuTLS would only find out at the first handshake (a
 * key of another certificate), and says in one line which file is wrong.
 */
#include "transport/tls.h"
#include "core/escape.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Reads one PEM file whole, at most SL_TLS_FILE_MAX bytes. */
static int read_pem(const char *key, const char *path, gnutls_datum_t *out, struct sl_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	ssize_t n;
	size_t got = 0;

	if (fd < 0) {
		sl_err_set(err, "sluice.http.tls.%s: %s: cannot open: %s", key, path, strerror(errno));
		return SL_ERR_IO;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		sl_err_set(err, "sluice.http.tls.%s: %s: not a regular file", key, path);
		return SL_ERR_IO;
	}
	if ((uint64_t)st.st_size > SL_TLS_FILE_MAX) {
		close(fd);
		sl_err_set(err, "sluice.http.tls.%s: %s: larger than %u bytes", key, path,
			   SL_TLS_FILE_MAX);
		return SL_ERR_TOO_LARGE;
	}
	out->data = sl_alloc((size_t)st.st_size + 1);
	while (got < (size_t)st.st_size && (n = read(fd, out->data + got, (size_t)st.st_size - got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			sl_err_set(err, "sluice.http.tls.%s: %s: cannot read: %s", key, path,
				   strerror(errno));
			close(fd);
			free(out->data);
			out->data = NULL;
			return SL_ERR_IO;
		}
		got += (size_t)n;
	}
	close(fd);
	out->size = (unsigned)got;
	return SL_OK;
}

/* The secret goes from memory as soon as GnuTLS has its own copy. */
static void datum_wipe(gnutls_datum_t *d)
{
	if (d->data)
		explicit_bzero(d->data, d->size);
	free(d->data);
	d->data = NULL;
}

/* What the log says of the server's certificate: its serial and notAfter. */
static void describe(struct sl_tls *t)
{
	gnutls_x509_crt_t crt;
	unsigned char serial[64];
	size_t n = sizeof(serial), room = (sizeof(t->serial) - 1) / 2; /* bytes t->serial shows */
	time_t now = time(NULL), until, since;
	struct tm tm;

	if (gnutls_pcert_export_x509(&t->pcert[0], &crt) < 0)
		return;
	if (gnutls_x509_crt_get_serial(crt, serial, &n) == 0)
		sl_hex(serial, n < room ? n : room, t->serial);
	until = gnutls_x509_crt_get_expiration_time(crt);
	since = gnutls_x509_crt_get_activation_time(crt);
	if (until != (time_t)-1 && gmtime_r(&until, &tm))
		strftime(t->until, sizeof(t->until), "%Y-%m-%d %H:%M:%S UTC", &tm);
	t->expired = (until != (time_t)-1 && until < now) || (since != (time_t)-1 && since > now);
	gnutls_x509_crt_deinit(crt);
}

/* Whether key is the private half of cert's public key. */
static bool key_matches(gnutls_pubkey_t cert, gnutls_privkey_t key)
{
	gnutls_pubkey_t pub;
	unsigned char a[64], b[64];
	size_t na = sizeof(a), nb = sizeof(b);
	bool same = false;

	if (gnutls_pubkey_init(&pub) < 0)
		return false;
	if (gnutls_pubkey_import_privkey(pub, key, 0, 0) == 0 &&
	    gnutls_pubkey_get_key_id(pub, GNUTLS_KEYID_USE_SHA256, a, &na) == 0 &&
	    gnutls_pubkey_get_key_id(cert, GNUTLS_KEYID_USE_SHA256, b, &nb) == 0)
		same = na == nb && !memcmp(a, b, na);
	gnutls_pubkey_deinit(pub);
	return same;
}

int sl_tls_load(const struct sl_tls_config *c, struct sl_tls **out, struct sl_err *err)
{
	struct sl_tls *t = sl_alloc(sizeof(*t));
	gnutls_datum_t cert = { 0 }, key = { 0 };
	int rc, g;

	if ((rc = read_pem("certFile", c->cert_file, &cert, err)) < 0)
		goto out;
	t->npcert = SL_TLS_CHAIN_MAX;
	g = gnutls_pcert_list_import_x509_raw(t->pcert, &t->npcert, &cert, GNUTLS_X509_FMT_PEM,
					      GNUTLS_X509_CRT_LIST_FAIL_IF_UNSORTED);
	if (g < 0) {
		t->npcert = 0;
		if (g == GNUTLS_E_SHORT_MEMORY_BUFFER)
			sl_err_set(err, "sluice.http.tls.certFile: %s: more than %u certificates",
				   c->cert_file, SL_TLS_CHAIN_MAX);
		else if (g == GNUTLS_E_CERTIFICATE_LIST_UNSORTED)
			sl_err_set(err, "sluice.http.tls.certFile: %s: the certificates are not in order "
				   "(the server's first, then each one's issuer)", c->cert_file);
		else
			sl_err_set(err, "sluice.http.tls.certFile: %s: not a PEM certificate (%s)",
				   c->cert_file, gnutls_strerror(g));
		rc = SL_ERR_INVALID;
		goto out;
	}
	if ((rc = read_pem("keyFile", c->key_file, &key, err)) < 0)
		goto out;
	if ((g = gnutls_privkey_init(&t->key)) < 0 ||
	    (g = gnutls_privkey_import_x509_raw(t->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
		sl_err_set(err, "sluice.http.tls.keyFile: %s: not an unencrypted PEM private key (%s)",
			   c->key_file, gnutls_strerror(g));
		rc = SL_ERR_INVALID;
		goto out;
	}
	if (!key_matches(t->pcert[0].pubkey, t->key)) {
		sl_err_set(err, "sluice.http.tls.keyFile: %s: not the key of the certificate in %s",
			   c->key_file, c->cert_file);
		rc = SL_ERR_INVALID;
		goto out;
	}
	describe(t);
	*out = t;
	t = NULL;
	rc = SL_OK;
out:
	free(cert.data);
	datum_wipe(&key);
	if (t)
		sl_tls_unref(t);
	return rc;
}

struct sl_tls *sl_tls_ref(struct sl_tls *t)
{
	t->refs++;
	return t;
}

void sl_tls_unref(struct sl_tls *t)
{
	if (!t || t->refs-- > 0)
		return;
	for (unsigned i = 0; i < t->npcert; i++)
		gnutls_pcert_deinit(&t->pcert[i]);
	if (t->key)
		gnutls_privkey_deinit(t->key);
	free(t);
}
