package fake_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
)

func TestStatusShape(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)

	a := do(t, srv, http.MethodGet, "/api/v3/status", "", "", "")

	expectJSON(g, a, http.StatusOK, "")
	var body map[string]any
	g.Expect(json.Unmarshal(a.body, &body)).To(Succeed())
	g.Expect(body).To(HaveKeyWithValue("status", "online"))
	g.Expect(body).To(HaveKeyWithValue("versions", map[string]any{"controller": "3.7.3", "ecnViewer": "1.4.4"}))
	g.Expect(body).To(HaveKey("uptimeSec"))
	g.Expect(string(a.body)).To(MatchRegexp(`"timestamp":[0-9]{13}[,}]`), "epoch milliseconds as an integer")
}

// Several Controller pods behind one Service: GET /status is answered by each pod in turn with
// its own uptime; a pod restart changes only its own, and keeps the database and the tokens.
func TestStatusOfSeveralPods(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	now := time.Now()
	srv.SetPods(now.Add(-time.Hour), now.Add(-2*time.Hour))
	uptime := func() float64 {
		var body struct {
			UptimeSec float64 `json:"uptimeSec"`
		}
		a := do(t, srv, http.MethodGet, "/api/v3/status", "", "", "")
		g.Expect(json.Unmarshal(a.body, &body)).To(Succeed())
		return body.UptimeSec
	}
	g.Expect(uptime()).To(BeNumerically("~", 3600, 60))
	g.Expect(uptime()).To(BeNumerically("~", 7200, 60))
	g.Expect(uptime()).To(BeNumerically("~", 3600, 60))

	token := srv.IssueToken()
	g.Expect(doJSON(t, srv, http.MethodPut, "/api/v3/router", `{"host":"h"}`, token).status).To(Equal(http.StatusOK))
	srv.RestartPod(0) // pod 1 answers next
	g.Expect(uptime()).To(BeNumerically("~", 7200, 60))
	g.Expect(uptime()).To(BeNumerically("<", 60), "pod 0 started again")
	g.Expect(doJSON(t, srv, http.MethodGet, "/api/v3/router", "", token).status).To(Equal(http.StatusOK), "same database, same tokens")
}

func TestAuthGateShapes(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)

	for _, token := range []string{"", "forged"} {
		a := doJSON(t, srv, http.MethodPut, "/api/v3/router", `{"host":"h"}`, token)
		expectJSON(g, a, http.StatusUnauthorized, `{"error":"Unauthorized: No authentication information found"}`)
	}
	a := do(t, srv, http.MethodGet, "/api/v3/router", "", "", "")
	g.Expect(a.status).To(Equal(http.StatusUnauthorized), "auth comes before the 404")

	srv.SetForbidden("not allowed")
	a = doJSON(t, srv, http.MethodPut, "/api/v3/router", `{"host":"h"}`, srv.IssueToken())
	expectJSON(g, a, http.StatusForbidden, `{"error":"Forbidden","message":"not allowed"}`)
	_, set := srv.Router()
	g.Expect(set).To(BeFalse())

	srv.SetForbidden("")
	a = doJSON(t, srv, http.MethodPut, "/api/v3/router", `{"host":"h"}`, srv.IssueToken())
	g.Expect(a.status).To(Equal(http.StatusOK))
}

func TestUnknownRouteIsExpressHTML404(t *testing.T) {
	tests := []struct{ method, path, want string }{
		{http.MethodGet, "/api/v3/nope", "Cannot GET /api/v3/nope"},
		{http.MethodDelete, "/api/v3/router", "Cannot DELETE /api/v3/router"},
		{http.MethodGet, "/api/v3/certificates/ca", "Cannot GET /api/v3/certificates/ca"},
		{http.MethodGet, "/api/v3/certificates/ca/a/b", "Cannot GET /api/v3/certificates/ca/a/b"},
		{http.MethodPost, "/api/v3/status", "Cannot POST /api/v3/status"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			g := NewWithT(t)
			srv := newFake(t)

			a := do(t, srv, tt.method, tt.path, "", "", srv.IssueToken())

			g.Expect(a.status).To(Equal(http.StatusNotFound))
			g.Expect(a.header.Get("Content-Type")).To(Equal("text/html; charset=utf-8"))
			g.Expect(a.header.Get("X-Timestamp")).NotTo(BeEmpty())
			g.Expect(string(a.body)).To(ContainSubstring("<pre>" + tt.want + "</pre>"))
			g.Expect(srv.Calls()).To(Equal([]string{tt.method + " " + tt.path}), "unknown routes are recorded too")
		})
	}
}

func TestLoginContract(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		body        string
		wantStatus  int
		wantBody    string // exact envelope, when given
	}{
		{name: "missing email", body: `{"password":"p"}`, wantStatus: 400,
			wantBody: `{"name":"ValidationError","message":"Required field 'email' is missing"}`},
		{name: "missing password", body: `{"email":"admin"}`, wantStatus: 400,
			wantBody: `{"name":"ValidationError","message":"Required field 'password' is missing"}`},
		{name: "email not a string", body: `{"email":1,"password":"p"}`, wantStatus: 400,
			wantBody: `{"name":"ValidationError","message":"Field 'email' is not of a type(s) string"}`},
		{name: "empty email", body: `{"email":"","password":"p"}`, wantStatus: 400},
		{name: "not JSON", body: `{"email":`, wantStatus: 400},
		{name: "form body is ignored by the JSON parser", contentType: "text/plain", body: `{"email":"admin","password":"pw"}`,
			wantStatus: 400, wantBody: `{"name":"ValidationError","message":"Required field 'email' is missing"}`},
		{name: "wrong password", body: `{"email":"admin","password":"nope"}`, wantStatus: 401,
			wantBody: `{"name":"InvalidCredentialsError","message":"Invalid credentials"}`},
		{name: "extra fields allowed", body: `{"email":"admin","password":"pw","totp":"123456"}`, wantStatus: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv := newFake(t, fake.WithCredentials("admin", "pw"))
			ct := tt.contentType
			if ct == "" {
				ct = "application/json"
			}

			a := do(t, srv, http.MethodPost, "/api/v3/user/login", ct, tt.body, "")

			expectJSON(g, a, tt.wantStatus, tt.wantBody)
			if tt.wantStatus == http.StatusBadRequest {
				name, _ := errorOf(g, a)
				g.Expect(name).To(Equal("ValidationError"))
			}
		})
	}
}

func TestLoginIssuesFreshTokens(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	body := `{"email":"` + fake.DefaultUsername + `","password":"` + fake.DefaultPassword + `"}`

	var tokens [2]struct{ AccessToken, RefreshToken string }
	for i := range tokens {
		a := doJSON(t, srv, http.MethodPost, "/api/v3/user/login", body, "")
		expectJSON(g, a, http.StatusOK, "")
		g.Expect(json.Unmarshal(a.body, &tokens[i])).To(Succeed())
		g.Expect(tokens[i].AccessToken).To(HaveLen(43))
		g.Expect(tokens[i].RefreshToken).NotTo(BeEmpty())
		a = do(t, srv, http.MethodGet, "/api/v3/nats/bootstrap", "", "", tokens[i].AccessToken)
		g.Expect(a.status).To(Equal(http.StatusOK))
	}
	g.Expect(tokens[0].AccessToken).NotTo(Equal(tokens[1].AccessToken))

	// Refresh tokens are not bearer tokens.
	a := do(t, srv, http.MethodGet, "/api/v3/nats/bootstrap", "", "", tokens[0].RefreshToken)
	g.Expect(a.status).To(Equal(http.StatusUnauthorized))
}

// The embedded Controller locks an account for 15 minutes after 5 wrong
// passwords in a row, the bootstrap admin included; while locked, the right
// password answers the same 401. Only a success clears the count: after a lock
// ends, one more wrong password locks the account again. An unknown email
// counts against no account.
func TestLoginLockout(t *testing.T) {
	g := NewWithT(t)
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	srv := newFake(t, fake.WithCredentials("admin", "pw"), fake.WithClock(clock))
	login := func(email, password string) int {
		return doJSON(t, srv, http.MethodPost, "/api/v3/user/login", `{"email":"`+email+`","password":"`+password+`"}`, "").status
	}
	const invalid = `{"name":"InvalidCredentialsError","message":"Invalid credentials"}`

	for range 4 {
		g.Expect(login("admin", "nope")).To(Equal(http.StatusUnauthorized))
	}
	g.Expect(srv.FailedLogins("admin")).To(Equal(4))
	g.Expect(login("admin", "pw")).To(Equal(http.StatusOK), "4 failures do not lock")
	g.Expect(srv.FailedLogins("admin")).To(BeZero(), "a success clears the count")

	for range 10 {
		g.Expect(login("someone", "nope")).To(Equal(http.StatusUnauthorized))
	}
	g.Expect(login("admin", "pw")).To(Equal(http.StatusOK), "an unknown email counts against no account")

	for range 5 {
		g.Expect(login("admin", "nope")).To(Equal(http.StatusUnauthorized))
	}
	g.Expect(srv.Locked("admin")).To(BeTrue())
	a := doJSON(t, srv, http.MethodPost, "/api/v3/user/login", `{"email":"admin","password":"pw"}`, "")
	expectJSON(g, a, http.StatusUnauthorized, invalid)

	advance(15*time.Minute - time.Second)
	g.Expect(login("admin", "pw")).To(Equal(http.StatusUnauthorized), "still locked")
	g.Expect(srv.FailedLogins("admin")).To(Equal(5), "a login while locked is not counted")
	advance(time.Second)
	g.Expect(srv.Locked("admin")).To(BeFalse())
	g.Expect(srv.FailedLogins("admin")).To(Equal(5), "the end of a lock does not reset the count")
	g.Expect(login("admin", "nope")).To(Equal(http.StatusUnauthorized))
	g.Expect(srv.Locked("admin")).To(BeTrue(), "the next wrong password locks again")
	advance(15 * time.Minute)
	g.Expect(login("admin", "pw")).To(Equal(http.StatusOK), "the lock ends after 15 minutes")
	g.Expect(srv.FailedLogins("admin")).To(BeZero(), "a success clears the count")
	g.Expect(login("admin", "nope")).To(Equal(http.StatusUnauthorized))
	g.Expect(srv.Locked("admin")).To(BeFalse(), "one failure after a success does not lock")
}

func TestOIDC(t *testing.T) {
	const form = "application/x-www-form-urlencoded"
	srv := newFake(t, fake.WithOIDCClient("op", "sec"))

	t.Run("discovery", func(t *testing.T) {
		g := NewWithT(t)
		a := do(t, srv, http.MethodGet, "/oidc/.well-known/openid-configuration", "", "", "")
		expectJSON(g, a, http.StatusOK, "")
		var meta map[string]any
		g.Expect(json.Unmarshal(a.body, &meta)).To(Succeed())
		g.Expect(meta).To(HaveKeyWithValue("issuer", srv.IssuerURL()))
		g.Expect(meta).To(HaveKeyWithValue("token_endpoint", srv.IssuerURL()+"/token"))
	})

	tests := []struct {
		name, contentType, body string
		basicAuth               bool
		wantStatus              int
		wantBody                string
	}{
		{name: "ok", contentType: form, body: "grant_type=client_credentials&client_id=op&client_secret=sec", wantStatus: 200},
		{name: "client_secret_basic", contentType: form, body: "grant_type=client_credentials", basicAuth: true, wantStatus: 200},
		{name: "wrong secret", contentType: form, body: "grant_type=client_credentials&client_id=op&client_secret=x",
			wantStatus: 401, wantBody: `{"error":"invalid_client"}`},
		{name: "unknown client", contentType: form, body: "grant_type=client_credentials&client_id=x&client_secret=sec",
			wantStatus: 401, wantBody: `{"error":"invalid_client"}`},
		{name: "password grant", contentType: form, body: "grant_type=password&client_id=op&client_secret=sec",
			wantStatus: 400, wantBody: `{"error":"unsupported_grant_type"}`},
		{name: "JSON body", contentType: "application/json", body: `{"grant_type":"client_credentials"}`, wantStatus: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.IssuerURL()+"/token",
				strings.NewReader(tt.body))
			g.Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Content-Type", tt.contentType)
			if tt.basicAuth {
				req.SetBasicAuth("op", "sec")
			}
			resp, err := http.DefaultClient.Do(req)
			g.Expect(err).NotTo(HaveOccurred())
			defer func() { _ = resp.Body.Close() }()
			body, err := io.ReadAll(resp.Body)
			g.Expect(err).NotTo(HaveOccurred())

			a := answer{status: resp.StatusCode, header: resp.Header, body: body}
			expectJSON(g, a, tt.wantStatus, tt.wantBody)
			if tt.wantStatus == http.StatusOK {
				var tok struct {
					AccessToken string `json:"access_token"`
					TokenType   string `json:"token_type"`
					ExpiresIn   int    `json:"expires_in"`
				}
				g.Expect(json.Unmarshal(body, &tok)).To(Succeed())
				g.Expect(tok.TokenType).To(Equal("Bearer"))
				g.Expect(tok.ExpiresIn).To(Equal(900))
				g.Expect(do(t, srv, http.MethodGet, "/api/v3/nats/bootstrap", "", "", tok.AccessToken).status).
					To(Equal(http.StatusOK))
			}
		})
	}
}

func TestRouterContract(t *testing.T) {
	t.Run("GET before PUT", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		a := do(t, srv, http.MethodGet, "/api/v3/router", "", "", srv.IssueToken())
		expectJSON(g, a, http.StatusNotFound, `{"name":"NotFoundError","message":"Invalid router 'default-router'"}`)
	})

	t.Run("PUT, update, GET", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		token := srv.IssueToken()

		a := doJSON(t, srv, http.MethodPut, "/api/v3/router", `{"host":"10.0.0.1","routerMode":"interior","x":1}`, token)
		expectJSON(g, a, http.StatusOK, "")
		var row map[string]any
		g.Expect(json.Unmarshal(a.body, &row)).To(Succeed())
		g.Expect(row).To(And(
			HaveKeyWithValue("id", 1.0), HaveKeyWithValue("isEdge", false), HaveKeyWithValue("isDefault", true),
			HaveKeyWithValue("host", "10.0.0.1"), HaveKeyWithValue("messagingPort", 5671.0),
			HaveKeyWithValue("edgeRouterPort", 45671.0), HaveKeyWithValue("interRouterPort", 55671.0),
			HaveKey("createdAt"), HaveKey("updatedAt"), Not(HaveKey("iofogUuid")),
		))
		createdAt := row["createdAt"]

		a = doJSON(t, srv, http.MethodPut, "/api/v3/router/", `{"host":"10.0.0.2","messagingPort":5000}`, token)
		expectJSON(g, a, http.StatusOK, "")
		g.Expect(json.Unmarshal(a.body, &row)).To(Succeed())
		g.Expect(row).To(And(HaveKeyWithValue("iofogUuid", BeNil()), HaveKeyWithValue("createdAt", createdAt)))

		a = do(t, srv, http.MethodGet, "/api/v3/router", "", "", token)
		expectJSON(g, a, http.StatusOK,
			`{"host":"10.0.0.2","messagingPort":5000,"edgeRouterPort":45671,"interRouterPort":55671}`)
	})

	tests := []struct{ name, body, wantMessage string }{
		{"missing host", `{"messagingPort":5671}`, "Required field 'host' is missing"},
		{"host not a string", `{"host":5}`, "Field 'host' is not of a type(s) string"},
		{"host null", `{"host":null}`, "Field 'host' is not of a type(s) string"},
		{"port as string", `{"host":"h","edgeRouterPort":"45671"}`, "Field 'edgeRouterPort' is not of a type(s) integer"},
		{"fractional port", `{"host":"h","edgeRouterPort":1.5}`, "Field 'edgeRouterPort' is not of a type(s) integer"},
		{"explicit zero port", `{"host":"h","interRouterPort":0}`, "interRouterPort must be greater than or equal to 1"},
		{"port too large", `{"host":"h","messagingPort":65536}`, ""},
		{"empty body", ``, "Required field 'host' is missing"},
		{"array body", `[1]`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv := newFake(t)

			a := doJSON(t, srv, http.MethodPut, "/api/v3/router", tt.body, srv.IssueToken())

			expectJSON(g, a, http.StatusBadRequest, "")
			name, message := errorOf(g, a)
			g.Expect(name).To(Equal("ValidationError"))
			if tt.wantMessage != "" {
				g.Expect(message).To(Equal(tt.wantMessage))
			}
			_, set := srv.Router()
			g.Expect(set).To(BeFalse())
		})
	}

	t.Run("integral float port is an integer", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		a := doJSON(t, srv, http.MethodPut, "/api/v3/router", `{"host":"h","messagingPort":5672.0}`, srv.IssueToken())
		g.Expect(a.status).To(Equal(http.StatusOK))
		r, _ := srv.Router()
		g.Expect(r.MessagingPort).To(Equal(5672))
	})
}

func TestHubContract(t *testing.T) {
	t.Run("GET before PUT", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		a := do(t, srv, http.MethodGet, "/api/v3/nats/hub", "", "", srv.IssueToken())
		expectJSON(g, a, http.StatusNotFound, `{"name":"NotFoundError","message":"NATS hub not found"}`)
	})

	t.Run("PUT echoes without sizes, GET", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		token := srv.IssueToken()
		want := `{"host":"n","serverPort":4222,"clusterPort":6222,"leafPort":7422,"mqttPort":8883,"httpPort":8222}`

		a := doJSON(t, srv, http.MethodPut, "/api/v3/nats/hub", `{"host":"n","jsStorageSize":"10 GB"}`, token)
		expectJSON(g, a, http.StatusOK, want)
		a = do(t, srv, http.MethodGet, "/api/v3/nats/hub", "", "", token)
		expectJSON(g, a, http.StatusOK, want)
		hub, _ := srv.Hub()
		g.Expect(hub.JsStorageSize).To(Equal("10 GB"))
	})

	tests := []struct{ name, body, wantMessage string }{
		{"missing host", `{}`, "Required field 'host' is missing"},
		{"port zero", `{"host":"n","mqttPort":0}`, "mqttPort must be greater than or equal to 1"},
		{"port string", `{"host":"n","httpPort":"8222"}`, "Field 'httpPort' is not of a type(s) integer"},
		{"size with Kubernetes suffix", `{"host":"n","jsMemoryStoreSize":"1Gi"}`, "Invalid format for field 'jsMemoryStoreSize'"},
		{"size without digits", `{"host":"n","jsStorageSize":"G"}`, "Invalid format for field 'jsStorageSize'"},
		{"size not a string", `{"host":"n","jsStorageSize":10}`, "Field 'jsStorageSize' is not of a type(s) string"},
		{"size too long", `{"host":"n","jsStorageSize":"` + strings.Repeat("1", 33) + `"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv := newFake(t)

			a := doJSON(t, srv, http.MethodPut, "/api/v3/nats/hub", tt.body, srv.IssueToken())

			expectJSON(g, a, http.StatusBadRequest, "")
			name, message := errorOf(g, a)
			g.Expect(name).To(Equal("ValidationError"))
			if tt.wantMessage != "" {
				g.Expect(message).To(Equal(tt.wantMessage))
			}
			_, set := srv.Hub()
			g.Expect(set).To(BeFalse())
		})
	}
}

func TestBootstrapContract(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	token := srv.IssueToken()

	a := do(t, srv, http.MethodGet, "/api/v3/nats/bootstrap", "", "", token)
	expectJSON(g, a, http.StatusOK, "")
	var body map[string]string
	g.Expect(json.Unmarshal(a.body, &body)).To(Succeed())
	g.Expect(body).To(HaveLen(6))
	g.Expect(body).To(HaveKeyWithValue("operatorPublicKey", HavePrefix("O")))
	g.Expect(body).To(HaveKeyWithValue("operatorSeed", HavePrefix("SO")))
	g.Expect(body).To(HaveKeyWithValue("systemAccountPublicKey", HavePrefix("A")))
	g.Expect(body).To(HaveKeyWithValue("operatorJwt", MatchRegexp(`^eyJ[\w-]+\.[\w-]+\.[\w-]+$`)))
	g.Expect(body).To(HaveKeyWithValue("systemAccountJwt", MatchRegexp(`^eyJ[\w-]+\.[\w-]+\.[\w-]+$`)))
	g.Expect(body).To(HaveKey("sysUserCredsBase64"))

	srv.SetBootstrapSecretMissing("nats-creds-sys-admin-hub")
	a = do(t, srv, http.MethodGet, "/api/v3/nats/bootstrap", "", "", token)
	expectJSON(g, a, http.StatusNotFound,
		`{"name":"NotFoundError","message":"Secret with name \"nats-creds-sys-admin-hub\" not found"}`)

	srv.SetKubernetesControlPlane(false)
	a = do(t, srv, http.MethodGet, "/api/v3/nats/bootstrap", "", "", token)
	expectJSON(g, a, http.StatusForbidden, `{"name":"ForbiddenError","message":`+
		`"NATS bootstrap is only available when the Controller runs on the Kubernetes control plane"}`)
}

func TestCAContract(t *testing.T) {
	const path = "/api/v3/certificates/ca"

	t.Run("GET before and after import", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		token := srv.IssueToken()

		a := do(t, srv, http.MethodGet, path+"/router-site-ca", "", "", token)
		expectJSON(g, a, http.StatusNotFound, `{"name":"NotFoundError","message":"CA with name router-site-ca not found"}`)

		a = doJSON(t, srv, http.MethodPost, path, `{"name":"router-site-ca","type":"k8s-secret","secretName":"router-site-ca"}`, token)
		expectJSON(g, a, http.StatusCreated, "")
		var created map[string]any
		g.Expect(json.Unmarshal(a.body, &created)).To(Succeed())
		g.Expect(created).To(HaveLen(5))
		g.Expect(created).To(And(
			HaveKeyWithValue("name", "router-site-ca"), HaveKeyWithValue("subject", "router-site-ca"),
			HaveKeyWithValue("type", "k8s-secret"),
			HaveKeyWithValue("valid_from", MatchRegexp(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)),
			HaveKey("valid_to"),
		))

		a = do(t, srv, http.MethodGet, path+"/router-site-ca", "", "", token)
		expectJSON(g, a, http.StatusOK, "")
		var info map[string]any
		g.Expect(json.Unmarshal(a.body, &info)).To(Succeed())
		g.Expect(info).To(And(
			HaveKeyWithValue("name", "router-site-ca"), HaveKeyWithValue("isCA", true),
			HaveKey("subject"), HaveKey("validFrom"), HaveKey("validTo"), HaveKey("serialNumber"),
			HaveKeyWithValue("data", And(HaveKey("certificate"), HaveKey("privateKey"))),
		))
		g.Expect(srv.ImportedCAs()).To(Equal([]string{"router-site-ca"}))
	})

	t.Run("DELETE removes the CA; a POST imports it again", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		token := srv.IssueToken()
		g.Expect(srv.ImportCA("router-site-ca")).To(Succeed())

		a := do(t, srv, http.MethodDelete, path+"/router-site-ca", "", "", token)
		expectJSON(g, a, http.StatusOK, `{}`)
		g.Expect(srv.ImportedCAs()).To(BeEmpty())
		a = do(t, srv, http.MethodDelete, path+"/router-site-ca", "", "", token)
		expectJSON(g, a, http.StatusNotFound, `{"name":"NotFoundError","message":"CA with name router-site-ca not found"}`)
		a = do(t, srv, http.MethodDelete, path+"/router-site-ca", "", "", "")
		g.Expect(a.status).To(Equal(http.StatusUnauthorized), "DELETE is protected")

		a = doJSON(t, srv, http.MethodPost, path, `{"name":"router-site-ca","type":"k8s-secret","secretName":"router-site-ca"}`, token)
		g.Expect(a.status).To(Equal(http.StatusCreated))
		g.Expect(srv.ImportedCAs()).To(Equal([]string{"router-site-ca"}))
		g.Expect(srv.CAImports("router-site-ca")).To(HaveLen(1))
		g.Expect(srv.CAImports("nats-site-ca")).To(BeEmpty())
	})

	t.Run("a CA that signed a certificate cannot be deleted until the certificate is", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		token := srv.IssueToken()
		g.Expect(srv.ImportCA("router-site-ca")).To(Succeed())
		g.Expect(srv.IssueCertificate("router-site-server-agent-1", "router-site-ca")).To(Succeed())
		g.Expect(srv.IssueCertificate("router-site-server-agent-2", "router-site-ca")).To(Succeed())

		a := do(t, srv, http.MethodDelete, path+"/router-site-ca", "", "", token)
		expectJSON(g, a, http.StatusInternalServerError, "")
		name, message := errorOf(g, a)
		g.Expect(name).To(Equal("ValidationError"), "the route maps no 400: the class comes with a 500")
		g.Expect(message).To(Equal("Cannot delete CA that has signed certificates. Please delete the following certificates first: " +
			"router-site-server-agent-1, router-site-server-agent-2"))
		g.Expect(srv.ImportedCAs()).To(Equal([]string{"router-site-ca"}))

		for _, cert := range []string{"router-site-server-agent-1", "router-site-server-agent-2"} {
			a = do(t, srv, http.MethodDelete, "/api/v3/certificates/"+cert, "", "", token)
			expectJSON(g, a, http.StatusOK, `{}`)
		}
		a = do(t, srv, http.MethodDelete, "/api/v3/certificates/router-site-server-agent-1", "", "", token)
		expectJSON(g, a, http.StatusNotFound, `{"name":"NotFoundError","message":"Certificate with name router-site-server-agent-1 not found"}`)
		a = do(t, srv, http.MethodDelete, "/api/v3/certificates/router-site-ca", "", "", token)
		g.Expect(a.status).To(Equal(http.StatusNotFound), "a CA is not deleted as a certificate")
		a = do(t, srv, http.MethodDelete, path+"/router-site-ca", "", "", token)
		expectJSON(g, a, http.StatusOK, `{}`)
		g.Expect(srv.ImportedCAs()).To(BeEmpty())
		g.Expect(srv.IssueCertificate("x", "router-site-ca")).To(MatchError(ContainSubstring("no CA")))
	})

	t.Run("a k8s-secret import stores the Secret's CA", func(t *testing.T) {
		g := NewWithT(t)
		cert, key := testCAPEM(g, "router-site-ca")
		secrets := map[string]map[string][]byte{
			"router-site-ca": {"tls.crt": cert, "tls.key": key},
			"no-keys":        {"ca.crt": cert},
			"garbage":        {"tls.crt": []byte("not PEM"), "tls.key": key},
		}
		srv := newFake(t, fake.WithSecretReader(func(_ context.Context, name string) (map[string][]byte, bool, error) {
			data, ok := secrets[name]
			return data, ok, nil
		}))
		token := srv.IssueToken()

		a := doJSON(t, srv, http.MethodPost, path, `{"name":"router-site-ca","type":"k8s-secret","secretName":"router-site-ca"}`, token)
		expectJSON(g, a, http.StatusCreated, "")
		g.Expect(string(a.body)).To(ContainSubstring(`"subject":"router-site-ca"`))
		a = do(t, srv, http.MethodGet, path+"/router-site-ca", "", "", token)
		var info struct {
			Data struct{ Certificate, PrivateKey string }
		}
		g.Expect(json.Unmarshal(a.body, &info)).To(Succeed())
		g.Expect(info.Data.Certificate).To(Equal(string(cert)))
		g.Expect(info.Data.PrivateKey).To(Equal(string(key)))
		held, _, ok := srv.CA("router-site-ca")
		g.Expect(ok).To(BeTrue())
		g.Expect(held).To(Equal(cert))

		for secret, want := range map[string]struct {
			status int
			name   string
		}{
			"missing": {http.StatusInternalServerError, "Error"},
			"no-keys": {http.StatusInternalServerError, "TypeError"},
			"garbage": {http.StatusBadRequest, "ValidationError"},
		} {
			a = doJSON(t, srv, http.MethodPost, path, `{"name":"`+secret+`","type":"k8s-secret","secretName":"`+secret+`"}`, token)
			expectJSON(g, a, want.status, "")
			name, _ := errorOf(g, a)
			g.Expect(name).To(Equal(want.name), secret)
		}
		g.Expect(srv.ImportedCAs()).To(Equal([]string{"router-site-ca"}))
	})

	t.Run("duplicate is a 500 ConflictError with stack", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		g.Expect(srv.ImportCA("x")).To(Succeed())

		a := doJSON(t, srv, http.MethodPost, path, `{"name":"x","type":"k8s-secret","secretName":"x"}`, srv.IssueToken())

		expectJSON(g, a, http.StatusInternalServerError, "")
		var env map[string]string
		g.Expect(json.Unmarshal(a.body, &env)).To(Succeed())
		g.Expect(env).To(HaveKeyWithValue("name", "ConflictError"))
		g.Expect(env).To(HaveKeyWithValue("message", "CA with name x already exists"))
		g.Expect(env).To(HaveKeyWithValue("stack", Not(BeEmpty())))
	})

	t.Run("duplicate in 409 mode", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		g.Expect(srv.ImportCA("x")).To(Succeed())
		srv.SetConflictStatus(http.StatusConflict)

		a := doJSON(t, srv, http.MethodPost, path, `{"name":"x","type":"k8s-secret","secretName":"x"}`, srv.IssueToken())

		expectJSON(g, a, http.StatusConflict, `{"name":"ConflictError","message":"CA with name x already exists"}`)
	})

	t.Run("unknown Kubernetes Secret", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		srv.SetKnownSecrets("known")
		token := srv.IssueToken()

		a := doJSON(t, srv, http.MethodPost, path, `{"name":"x","type":"k8s-secret","secretName":"x"}`, token)
		expectJSON(g, a, http.StatusInternalServerError, "")
		name, message := errorOf(g, a)
		g.Expect(name).To(Equal("Error"))
		g.Expect(message).To(HavePrefix("Failed to get CA from Kubernetes secret: "))

		a = doJSON(t, srv, http.MethodPost, path, `{"name":"known","type":"k8s-secret","secretName":"known"}`, token)
		g.Expect(a.status).To(Equal(http.StatusCreated))
		srv.AllowAllSecrets()
		a = doJSON(t, srv, http.MethodPost, path, `{"name":"x","type":"k8s-secret","secretName":"x"}`, token)
		g.Expect(a.status).To(Equal(http.StatusCreated))
		g.Expect(srv.ImportedCAs()).To(Equal([]string{"known", "x"}))
	})

	t.Run("not the Kubernetes control plane", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		srv.SetKubernetesControlPlane(false)
		a := doJSON(t, srv, http.MethodPost, path, `{"name":"x","type":"k8s-secret","secretName":"x"}`, srv.IssueToken())
		expectJSON(g, a, http.StatusBadRequest,
			`{"name":"ValidationError","message":"Controller is not running in Kubernetes environment"}`)
	})

	t.Run("self-signed is stored under its name with its subject", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		a := doJSON(t, srv, http.MethodPost, path, `{"name":"ss","type":"self-signed","subject":"My CA","expiration":12}`, srv.IssueToken())
		expectJSON(g, a, http.StatusCreated, "")
		g.Expect(string(a.body)).To(ContainSubstring(`"subject":"My CA"`))
		g.Expect(srv.ImportedCAs()).To(Equal([]string{"ss"}))
	})

	tests := []struct{ name, body, wantMessage string }{
		{"extra field", `{"name":"x","type":"k8s-secret","secretName":"x","namespace":"y"}`, "Field 'namespace' not allowed"},
		{"missing name", `{"type":"k8s-secret","secretName":"x"}`, "Required field 'name' is missing"},
		{"missing type", `{"name":"x","secretName":"x"}`, "Required field 'type' is missing"},
		{"missing secretName", `{"name":"x","type":"direct"}`, "Required field 'secretName' is missing"},
		{"empty subject", `{"name":"x","type":"k8s-secret","secretName":"x","subject":""}`, ""},
		{"empty name", `{"name":"","type":"k8s-secret","secretName":"x"}`, ""},
		{"long name", `{"name":"` + strings.Repeat("n", 256) + `","type":"k8s-secret","secretName":"x"}`, ""},
		{"unknown type", `{"name":"x","type":"acme","secretName":"x"}`, ""},
		{"negative expiration", `{"name":"x","type":"self-signed","expiration":-1}`, "expiration must be greater than or equal to 0"},
		{"secretName not a string", `{"name":"x","type":"k8s-secret","secretName":1}`, "Field 'secretName' is not of a type(s) string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv := newFake(t)

			a := doJSON(t, srv, http.MethodPost, path, tt.body, srv.IssueToken())

			expectJSON(g, a, http.StatusBadRequest, "")
			name, message := errorOf(g, a)
			g.Expect(name).To(Equal("ValidationError"))
			if tt.wantMessage != "" {
				g.Expect(message).To(Equal(tt.wantMessage))
			}
			g.Expect(srv.ImportedCAs()).To(BeEmpty())
		})
	}
}

func TestRecording(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	token := srv.IssueToken()

	do(t, srv, http.MethodGet, "/api/v3/status?verbose=1", "", "", "")
	doJSON(t, srv, http.MethodPut, "/api/v3/router", `{"host":"h"}`, token)
	do(t, srv, http.MethodGet, "/api/v3/router", "", "", token)

	g.Expect(srv.Calls()).To(Equal([]string{"GET /api/v3/status", "PUT /api/v3/router", "GET /api/v3/router"}))
	reqs := srv.Requests()
	g.Expect(reqs[0].RawQuery).To(Equal("verbose=1"))
	g.Expect(reqs[1].Body).To(Equal([]byte(`{"host":"h"}`)))
	g.Expect(reqs[1].Header.Get("Authorization")).To(Equal("Bearer " + token))
	g.Expect(srv.RequestsTo(http.MethodGet, "/api/v3/router")).To(HaveLen(1))
	g.Expect(srv.RequestsTo(http.MethodPut, "/api/v3/status")).To(BeEmpty())

	// Returned records are copies.
	reqs[1].Header.Set("Authorization", "changed")
	reqs[1].Body[0] = 'X'
	g.Expect(srv.Requests()[1].Header.Get("Authorization")).To(Equal("Bearer " + token))
	g.Expect(srv.Requests()[1].Body).To(Equal([]byte(`{"host":"h"}`)))

	srv.Reset()
	g.Expect(srv.Calls()).To(BeEmpty())
	_, routerKept := srv.Router()
	g.Expect(routerKept).To(BeTrue(), "Reset keeps server state")
}

func TestFailures(t *testing.T) {
	t.Run("FailNext is one-shot and queues", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		srv.FailNext("GET /api/v3/status", fake.Failure{Status: http.StatusServiceUnavailable})
		srv.FailNext("GET /api/v3/status", fake.Failure{Status: http.StatusBadGateway, Name: "Proxy", Message: "down"})

		a := do(t, srv, http.MethodGet, "/api/v3/status", "", "", "")
		expectJSON(g, a, http.StatusServiceUnavailable, `{"name":"Error","message":"Service Unavailable"}`)
		a = do(t, srv, http.MethodGet, "/api/v3/status", "", "", "")
		expectJSON(g, a, http.StatusBadGateway, `{"name":"Proxy","message":"down"}`)
		a = do(t, srv, http.MethodGet, "/api/v3/status", "", "", "")
		g.Expect(a.status).To(Equal(http.StatusOK))
	})

	t.Run("500 carries a stack", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		srv.FailNext("PUT /api/v3/router", fake.Failure{})
		a := doJSON(t, srv, http.MethodPut, "/api/v3/router", `{"host":"h"}`, "")
		expectJSON(g, a, http.StatusInternalServerError, "")
		g.Expect(string(a.body)).To(ContainSubstring(`"stack":`))
	})

	t.Run("FailAlways until cleared, with wildcards", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		token := srv.IssueToken()
		srv.FailAlways("* /api/v3/certificates/*", fake.Failure{Garbage: true})

		for range 2 {
			a := do(t, srv, http.MethodGet, "/api/v3/certificates/ca/x", "", "", token)
			g.Expect(a.status).To(Equal(http.StatusOK))
			g.Expect(json.Valid(a.body)).To(BeFalse())
		}
		a := doJSON(t, srv, http.MethodPost, "/api/v3/certificates/ca", `{}`, token)
		g.Expect(json.Valid(a.body)).To(BeFalse())
		g.Expect(do(t, srv, http.MethodGet, "/api/v3/status", "", "", "").status).To(Equal(http.StatusOK))

		srv.ClearFailures()
		a = do(t, srv, http.MethodGet, "/api/v3/certificates/ca/x", "", "", token)
		g.Expect(a.status).To(Equal(http.StatusNotFound))
		g.Expect(srv.Calls()).To(HaveLen(5), "failed requests are recorded too")
	})

	t.Run("Hang ends when the client gives up", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		srv.FailNext("GET /api/v3/status", fake.Failure{Hang: true})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL()+"/api/v3/status", nil)
		g.Expect(err).NotTo(HaveOccurred())

		resp, err := http.DefaultClient.Do(req)
		if resp != nil {
			_ = resp.Body.Close()
		}
		g.Expect(errors.Is(err, context.DeadlineExceeded)).To(BeTrue(), "got %v", err)
		// The server is still healthy afterwards.
		g.Expect(do(t, srv, http.MethodGet, "/api/v3/status", "", "", "").status).To(Equal(http.StatusOK))
	})

	t.Run("Hang ends without a response when the server closes", func(t *testing.T) {
		g := NewWithT(t)
		srv := fake.NewServer()
		srv.FailNext("GET /api/v3/status", fake.Failure{Hang: true})
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL()+"/api/v3/status", nil)
		g.Expect(err).NotTo(HaveOccurred())

		done := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if resp != nil {
				_ = resp.Body.Close()
			}
			done <- err
		}()
		g.Eventually(srv.Calls).Should(Equal([]string{"GET /api/v3/status"}))
		srv.Close()

		var got error
		g.Eventually(done).Should(Receive(&got))
		g.Expect(got).To(HaveOccurred(), "the connection is dropped, no response is sent")
	})
}

// Listen serves the same Controller on a second (loopback) address; Wipe forgets the
// registrations and tokens and restarts the uptime, as a Controller on an empty database.
func TestListenAndWipe(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	addr, err := srv.Listen("127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())

	token := srv.IssueToken()
	a := doJSON(t, srv, http.MethodPut, "/api/v3/router", `{"host":"h","messagingPort":5671,"edgeRouterPort":45671,"interRouterPort":55671}`, token)
	g.Expect(a.status).To(Equal(http.StatusOK), string(a.body))
	_, ok := srv.Router()
	g.Expect(ok).To(BeTrue())

	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+addr+"/api/v3/status", nil)
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(srv.Calls()).To(ContainElement("GET /api/v3/status"), "one request log for every address")

	srv.Wipe()
	_, ok = srv.Router()
	g.Expect(ok).To(BeFalse())
	g.Expect(srv.ImportedCAs()).To(BeEmpty())
	a = doJSON(t, srv, http.MethodGet, "/api/v3/router", "", token)
	g.Expect(a.status).To(Equal(http.StatusUnauthorized), "tokens are forgotten")
	var st struct{ UptimeSec float64 }
	g.Expect(json.Unmarshal(do(t, srv, http.MethodGet, "/api/v3/status", "", "", "").body, &st)).To(Succeed())
	g.Expect(st.UptimeSec).To(BeNumerically("<", 5))
}

// The fake keeps its database in the directory it was started with, as the Controller keeps its
// SQLite file in SQLITE_STORAGE_DIR: a restart with the same directory finds the router, the hub,
// the CAs and what they signed again; a restart with another directory (the database was on the
// pod's own filesystem) starts empty. Tokens never survive a restart.
func TestRestartKeepsTheDatabaseOfItsDirectory(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	volume := t.TempDir()
	g.Expect(srv.Restart(volume)).To(Succeed())
	token := srv.IssueToken()
	a := doJSON(t, srv, http.MethodPut, "/api/v3/router", `{"host":"h"}`, token)
	g.Expect(a.status).To(Equal(http.StatusOK))
	a = doJSON(t, srv, http.MethodPut, "/api/v3/nats/hub", `{"host":"n"}`, token)
	g.Expect(a.status).To(Equal(http.StatusOK))
	cert, key := testCAPEM(g, "router-site-ca")
	g.Expect(srv.AddCA("router-site-ca", cert, key)).To(Succeed())
	g.Expect(srv.IssueCertificate("router-site-server-agent-1", "router-site-ca")).To(Succeed())

	g.Expect(srv.Restart(volume)).To(Succeed())
	router, ok := srv.Router()
	g.Expect(ok).To(BeTrue())
	g.Expect(router.Host).To(Equal("h"))
	hub, ok := srv.Hub()
	g.Expect(ok).To(BeTrue())
	g.Expect(hub.Host).To(Equal("n"))
	held, heldKey, ok := srv.CA("router-site-ca")
	g.Expect(ok).To(BeTrue())
	g.Expect(held).To(Equal(cert))
	g.Expect(heldKey).To(Equal(key))
	a = doJSON(t, srv, http.MethodGet, "/api/v3/router", "", token)
	g.Expect(a.status).To(Equal(http.StatusUnauthorized), "tokens are forgotten")
	token = srv.IssueToken()
	a = do(t, srv, http.MethodDelete, "/api/v3/certificates/ca/router-site-ca", "", "", token)
	g.Expect(a.status).To(Equal(http.StatusInternalServerError), "what the CA signed survives too")

	g.Expect(srv.Restart(t.TempDir())).To(Succeed())
	_, ok = srv.Router()
	g.Expect(ok).To(BeFalse(), "another directory holds no database")
	g.Expect(srv.ImportedCAs()).To(BeEmpty())
}

// SQLiteStorageDir follows the 3.8+ image: SQLITE_STORAGE_DIR when set (relative to the working
// directory /home/runner), else the package directory on the container's filesystem.
func TestSQLiteStorageDir(t *testing.T) {
	g := NewWithT(t)
	g.Expect(fake.SQLiteStorageDir(nil)).To(Equal("/home/runner/.npm-global/lib/node_modules/controller/src/data/sqlite_files"))
	g.Expect(fake.SQLiteStorageDir(map[string]string{"SQLITE_STORAGE_DIR": ""})).To(Equal(fake.ImageSQLiteDir))
	g.Expect(fake.SQLiteStorageDir(map[string]string{"SQLITE_STORAGE_DIR": "/var/lib/controller/sqlite/"})).To(Equal("/var/lib/controller/sqlite"))
	g.Expect(fake.SQLiteStorageDir(map[string]string{"SQLITE_STORAGE_DIR": "data"})).To(Equal("/home/runner/data"))
}
